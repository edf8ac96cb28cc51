"""Passage links (rag_api.access.links): a signed token names one chunk until it expires; altered,
re-signed elsewhere, expired or not a token, it is refused; the secret is made once per node,
owner-only, or given, or shared by a deployment's replicas."""

from __future__ import annotations

import stat
import threading

import pytest
from qdrant_client import QdrantClient

from rag_api.access.links import LinkExpired, LinkRefused, PassageLinks, secret_file
from rag_api.replicas.shared_links import shared_secret
from rag_api.store.remote import RemoteStore


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def links(secret: bytes = b"k" * 32, ttl: float | None = 3600, clock=None) -> PassageLinks:
    return PassageLinks(lambda: secret, ttl, clock or Clock())


def test_a_token_names_its_chunk_until_it_expires() -> None:
    clock = Clock()
    signer = links(clock=clock)
    token = signer.token("docs", "help:https://x.org/a b", 3)
    cited = signer.read(token)
    assert (cited.collection, cited.source, cited.chunk_index) == (
        "docs",
        "help:https://x.org/a b",
        3,
    )
    assert signer.url("http://hub:8000/", "docs", "faq.md", 0).startswith(
        "http://hub:8000/passages/p1."
    )
    clock.now += 3601
    with pytest.raises(LinkExpired):
        signer.read(token)


@pytest.mark.parametrize(
    "change",
    [
        lambda t: t[:-2] + ("AA" if not t.endswith("AA") else "BB"),  # the signature
        lambda t: t.replace(".", ".e", 1),  # the claims
        lambda t: "p2" + t[2:],  # another version
        lambda t: "not a link",
        lambda t: t.rsplit(".", 1)[0],
    ],
)
def test_an_altered_token_is_refused(change) -> None:
    signer = links()
    with pytest.raises(LinkRefused) as refused:
        signer.read(change(signer.token("docs", "faq.md", 0)))
    assert not isinstance(refused.value, LinkExpired)


def test_another_hubs_token_is_refused_and_an_expiry_is_not_believed_unsigned() -> None:
    mine, theirs = links(b"a" * 32), links(b"b" * 32, ttl=10**9)
    with pytest.raises(LinkRefused, match="altered, or signed by another hub"):
        mine.read(theirs.token("docs", "faq.md", 0))


def test_off_makes_no_token() -> None:
    assert not links(ttl=None).enabled
    with pytest.raises(AssertionError):
        links(ttl=None).token("docs", "faq.md", 0)


def test_a_nodes_secret_is_made_once_owner_only_and_kept(tmp_path) -> None:
    path = tmp_path / "data" / "passage-links.key"
    first = secret_file(path)()
    assert len(first) == 32 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert secret_file(path)() == first  # another process, later: the same
    assert secret_file(path, given="from-the-environment")() == b"from-the-environment"
    assert list(path.parent.iterdir()) == [path]  # nothing left beside it


def test_two_processes_making_the_secret_at_once_end_with_one(tmp_path) -> None:
    path = tmp_path / "passage-links.key"
    found: list[bytes] = []
    makers = [threading.Thread(target=lambda: found.append(secret_file(path)())) for _ in range(8)]
    for maker in makers:
        maker.start()
    for maker in makers:
        maker.join()
    assert len(set(found)) == 1 and found[0] == path.read_bytes()


def test_replicas_share_the_writers_secret() -> None:
    store = RemoteStore.sharing(QdrantClient(location=":memory:"), threading.RLock(), "memory")
    reader = shared_secret(store.system, makes=False)
    with pytest.raises(LinkRefused, match="writer has started"):
        reader()
    writer = shared_secret(store.system, makes=True)
    token = PassageLinks(writer, 60).token("docs", "faq.md", 1)
    assert PassageLinks(shared_secret(store.system, makes=False), 60).read(token).chunk_index == 1
