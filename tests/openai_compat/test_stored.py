"""Stored responses on disk (rag_api.openai_compat.stored.ResponseStore), on a clock the test
moves: a response is kept as one JSON file dated by its creation, found until its age passes the
TTL (to the second), dropped oldest first beyond the count, read back after a restart in the order
of its files' times; an id that is not one the hub makes, a file it did not write, or a collection
the request's key may not read is not found, in OpenAI's words, naming the parameter."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_api.access.grant import Grant, Principal, current
from rag_api.openai_compat.stored import ResponseNotFound, ResponseStore, StoredResponse

START = 1_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def rid(n: int) -> str:
    return f"resp_{n:032x}"


def stored(n: int, at: float, collection: str = "docs") -> StoredResponse:
    return StoredResponse(collection, at, {"id": rid(n), "output": []}, [])


def kept(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


@pytest.fixture
def reader_of_docs() -> Iterator[None]:
    """The request's key reads `docs` and writes nothing; the request itself is a write."""
    token = current.set(Grant(Principal("k", "reader", read=frozenset({"docs"})), "write"))
    yield
    current.reset(token)


def test_a_store_is_enabled_by_any_positive_ttl(tmp_path: Path) -> None:
    assert ResponseStore(tmp_path, ttl_s=1, max_count=5).enabled
    assert ResponseStore(tmp_path, ttl_s=0.5, max_count=5).enabled
    assert not ResponseStore(tmp_path, ttl_s=0, max_count=5).enabled


def test_the_keeper_keeps_the_response_with_its_conversation_and_output(
    tmp_path: Path, clock: Clock
) -> None:
    store = ResponseStore(tmp_path / "a" / "b", ttl_s=100, max_count=5, clock=clock)
    output = [{"type": "message", "content": "Réponse"}]
    response = {"id": rid(1), "output": output}
    clock.now += 7
    store.keeper("docs", [{"role": "user", "content": "¿Qué?"}])(response)
    found = store.find(rid(1))
    assert found == StoredResponse(
        "docs", START + 7, response, [{"role": "user", "content": "¿Qué?"}, *output]
    )
    path = tmp_path / "a" / "b" / f"{rid(1)}.json"
    assert kept(path.parent) == [path.name]
    assert "Réponse" in path.read_text(encoding="utf-8")
    assert json.loads(path.read_text(encoding="utf-8"))["collection"] == "docs"
    assert path.stat().st_mtime == START + 7


def test_an_unknown_id_is_not_found_naming_the_parameter_and_the_ttl(
    tmp_path: Path, clock: Clock
) -> None:
    store = ResponseStore(tmp_path, ttl_s=100, max_count=5, clock=clock)
    with pytest.raises(ResponseNotFound) as missing:
        store.find(rid(1))
    assert missing.value.param == "response_id"
    assert missing.value.message == (
        f"Response with id '{rid(1)}' not found (responses are kept 100 s, "
        "and only with store: true)"
    )
    with pytest.raises(ResponseNotFound) as missing:
        store.find(rid(1), "previous_response_id")
    assert missing.value.param == "previous_response_id"
    with pytest.raises(ResponseNotFound) as missing:
        store.delete(rid(1))
    assert missing.value.param == "response_id"


@pytest.mark.parametrize(
    "response_id",
    [f"resp_{1:031x}", f"resp_{1:033x}", f"xresp_{1:032x}", f"resp_{'A' * 32}", f"RESP_{1:032x}"],
)
def test_only_an_id_the_hub_makes_is_read(tmp_path: Path, clock: Clock, response_id: str) -> None:
    store = ResponseStore(tmp_path, ttl_s=100, max_count=5, clock=clock)
    record = {"collection": "docs", "created_at": START, "response": {}, "items": []}
    (tmp_path / f"{response_id}.json").write_text(json.dumps(record))
    with pytest.raises(ResponseNotFound):
        store.find(response_id)


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        json.dumps({"collection": "docs", "created_at": START, "response": {}}),
        json.dumps(
            {"collection": "docs", "created_at": START, "response": {}, "items": [], "x": 1}
        ),
        json.dumps(["docs"]),
    ],
)
def test_a_file_the_hub_did_not_write_is_not_a_response(
    tmp_path: Path, clock: Clock, text: str
) -> None:
    store = ResponseStore(tmp_path, ttl_s=100, max_count=5, clock=clock)
    (tmp_path / f"{rid(1)}.json").write_text(text)
    with pytest.raises(ResponseNotFound):
        store.find(rid(1))


def test_a_response_written_by_another_store_in_utf8_is_read(tmp_path: Path, clock: Clock) -> None:
    record = {"collection": "ñandú", "created_at": START, "response": {"id": rid(1)}, "items": []}
    (tmp_path / f"{rid(1)}.json").write_bytes(json.dumps(record, ensure_ascii=False).encode())
    store = ResponseStore(tmp_path, ttl_s=100, max_count=5, clock=clock)
    assert store.find(rid(1)) == StoredResponse("ñandú", START, {"id": rid(1)}, [])


def test_a_response_is_found_until_its_age_passes_the_ttl_then_removed(
    tmp_path: Path, clock: Clock
) -> None:
    store = ResponseStore(tmp_path, ttl_s=100, max_count=5, clock=clock)
    store.save(stored(1, START))
    clock.now = START + 100
    assert store.find(rid(1)).created_at == START
    clock.now = START + 100.5
    with pytest.raises(ResponseNotFound):
        store.find(rid(1))
    assert kept(tmp_path) == []
    clock.now = START
    with pytest.raises(ResponseNotFound):  # forgotten, not only hidden
        store.find(rid(1))


def test_a_save_sweeps_the_expired_but_keeps_a_response_exactly_ttl_old(
    tmp_path: Path, clock: Clock
) -> None:
    store = ResponseStore(tmp_path, ttl_s=100, max_count=5, clock=clock)
    store.save(stored(1, START))
    store.save(stored(2, START + 1))
    clock.now = START + 101
    store.save(stored(3, START + 101))
    assert kept(tmp_path) == [f"{rid(2)}.json", f"{rid(3)}.json"]


def test_the_oldest_beyond_the_count_go_and_a_saved_again_one_is_the_newest(
    tmp_path: Path, clock: Clock
) -> None:
    store = ResponseStore(tmp_path, ttl_s=1000, max_count=2, clock=clock)
    store.save(stored(1, START))
    store.save(stored(2, START + 1))
    assert kept(tmp_path) == [f"{rid(1)}.json", f"{rid(2)}.json"]
    store.save(stored(1, START + 2))
    store.save(stored(3, START + 3))
    assert kept(tmp_path) == [f"{rid(1)}.json", f"{rid(3)}.json"]
    assert store.find(rid(1)).created_at == START + 2


def test_a_restarted_store_reads_the_folder_in_the_order_of_the_files_times(
    tmp_path: Path, clock: Clock
) -> None:
    first = ResponseStore(tmp_path, ttl_s=1000, max_count=10, clock=clock)
    for n, at in ((1, START + 2), (2, START), (3, START + 1)):
        first.save(stored(n, at))
    (tmp_path / "notes.json").write_text("{}")
    restarted = ResponseStore(tmp_path, ttl_s=1000, max_count=2, clock=clock)
    restarted.save(stored(4, START + 3))
    assert kept(tmp_path) == ["notes.json", f"{rid(1)}.json", f"{rid(4)}.json"]
    assert os.path.getmtime(tmp_path / f"{rid(1)}.json") == START + 2


def test_a_store_on_a_folder_not_made_yet_starts_empty(tmp_path: Path, clock: Clock) -> None:
    store = ResponseStore(tmp_path / "responses", ttl_s=100, max_count=1, clock=clock)
    with pytest.raises(ResponseNotFound):
        store.find(rid(1))
    store.save(stored(1, START))
    assert kept(tmp_path / "responses") == [f"{rid(1)}.json"]


def test_delete_returns_the_response_and_forgets_it(tmp_path: Path, clock: Clock) -> None:
    store = ResponseStore(tmp_path, ttl_s=100, max_count=2, clock=clock)
    store.save(stored(1, START))
    store.save(stored(2, START + 1))
    assert store.delete(rid(2)) == stored(2, START + 1)
    assert kept(tmp_path) == [f"{rid(1)}.json"]
    with pytest.raises(ResponseNotFound):
        store.find(rid(2))
    store.save(stored(3, START + 2))  # the deleted one no longer counts toward the two
    assert kept(tmp_path) == [f"{rid(1)}.json", f"{rid(3)}.json"]


def test_a_response_another_store_wrote_since_the_folder_was_read_can_be_deleted(
    tmp_path: Path, clock: Clock
) -> None:
    store = ResponseStore(tmp_path, ttl_s=100, max_count=5, clock=clock)
    store.save(stored(1, START))
    ResponseStore(tmp_path, ttl_s=100, max_count=5, clock=clock).save(stored(2, START))
    assert store.delete(rid(2)).collection == "docs"
    assert kept(tmp_path) == [f"{rid(1)}.json"]


def test_a_save_flushes_nothing_to_disk(tmp_path: Path, clock: Clock, monkeypatch) -> None:
    """A response is not worth two fsyncs (~10 ms each on a busy disk): a machine crash may lose
    it, never a process crash."""
    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", synced.append)
    ResponseStore(tmp_path, ttl_s=100, max_count=5, clock=clock).save(stored(1, START))
    assert synced == [] and kept(tmp_path) == [f"{rid(1)}.json"]


def test_a_key_finds_only_the_responses_of_collections_it_may_read(
    tmp_path: Path, clock: Clock, reader_of_docs: None
) -> None:
    store = ResponseStore(tmp_path, ttl_s=100, max_count=5, clock=clock)
    store.save(stored(1, START, "docs"))
    store.save(stored(2, START, "hr"))
    assert store.find(rid(1)).collection == "docs"
    with pytest.raises(ResponseNotFound) as hidden:
        store.find(rid(2), "previous_response_id")
    assert hidden.value.param == "previous_response_id"
    with pytest.raises(ResponseNotFound):
        store.delete(rid(2))
    assert kept(tmp_path) == [f"{rid(1)}.json", f"{rid(2)}.json"]


def test_a_response_file_removed_by_hand_breaks_no_save(tmp_path: Path, clock: Clock) -> None:
    store = ResponseStore(tmp_path, ttl_s=100, max_count=1, clock=clock)
    store.save(stored(1, START))
    (tmp_path / f"{rid(1)}.json").unlink()
    store.save(stored(2, START + 1))
    assert kept(tmp_path) == [f"{rid(2)}.json"]


def test_a_restart_skips_a_file_gone_while_it_reads_the_folder(
    tmp_path: Path, clock: Clock
) -> None:
    first = ResponseStore(tmp_path, ttl_s=1000, max_count=10, clock=clock)
    for n in range(1, 6):
        first.save(stored(n, START + n))
    (tmp_path / f"{rid(9)}.json").symlink_to(tmp_path / "gone.json")
    restarted = ResponseStore(tmp_path, ttl_s=1000, max_count=1, clock=clock)
    restarted.save(stored(6, START + 6))
    assert kept(tmp_path) == [f"{rid(6)}.json", f"{rid(9)}.json"]
