"""Access tokens against keys, and a reader's refreshes off its requests, each side by side in one
run (issue 60).

1. tokens: `POST /v1/rag/context` round trips with an identity provider's access token (RS256,
   its JWKS served on loopback) against the same with a key, alternating request by request on
   one kept-alive connection each, a new question every request (1,000 chunks, hash embedder:
   the auth's share is what moves). A token is checked once, then remembered until it expires:
   the figure that counts is the reused token's; a fresh token's first request is printed too.
2. readers: a reader of a replica deployment whose Qdrant answers every call `--delay-ms` late
   (one in-memory client behind a delay, as tests/replicas share one): `GET /v1/models` round
   trips, ~20 a second, while the reader re-reads its keys document and the writer's published
   pointers on its requests (the code before: its refreshes stopped) against the same reader
   renewing both in threads of their own (now).

    HF_HUB_OFFLINE=1 PYTHONPATH=. python scripts/bench_tokens.py --requests 600 --delay-ms 20
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jwt  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import rsa  # noqa: E402
from jwt.algorithms import RSAAlgorithm  # noqa: E402
from qdrant_client import QdrantClient  # noqa: E402

from rag_api.hub import Hub  # noqa: E402
from rag_api.settings import Settings  # noqa: E402
from rag_api.store.remote import RemoteStore  # noqa: E402
from scripts.evallib.client import connect, timed_post  # noqa: E402
from scripts.evallib.hub import HASH, written_settings  # noqa: E402
from scripts.evallib.server import app_server, free_port  # noqa: E402
from scripts.evallib.stats import machine_line  # noqa: E402

KEY = "bench-reader-key"
AUDIENCE = "urn:rag-hub"
WORDS = "refund invoice shipping warranty account password export report plan order".split()


class Provider:
    """An identity provider's discovery document and JWKS on loopback, and its tokens."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        port = free_port()
        self.issuer = f"http://127.0.0.1:{port}"
        documents = {
            "/.well-known/openid-configuration": {
                "issuer": self.issuer,
                "jwks_uri": f"{self.issuer}/jwks",
            },
            "/jwks": {"keys": [{**jwk, "kid": "bench", "use": "sig", "alg": "RS256"}]},
        }

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                body = json.dumps(documents[self.path]).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def token(self) -> str:
        now = int(time.time())
        claims = {"iss": self.issuer, "aud": AUDIENCE, "sub": "bench", "iat": now,
                  "exp": now + 3600, "scope": "rag:read:*", "jti": str(time.perf_counter_ns())}  # fmt: skip
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": "bench"})


def questions(count: int) -> list[str]:
    return [f"{WORDS[n % 10]} {WORDS[n // 10 % 10]} question {n}" for n in range(count)]


def fill(hub: Hub) -> None:
    for n in range(100):
        text = "\n\n".join(
            f"{WORDS[(n + p) % 10]} policy {n}.{p}: "
            + " ".join(WORDS[(n * p + i) % 10] for i in range(40))
            for p in range(10)
        )
        hub.kb.upsert_document(_upsert(text, f"doc{n}"))


def _upsert(text: str, source: str) -> Any:
    from rag_api.kbadmin.models import UpsertDocument

    return UpsertDocument(collection="docs", source=source, text=text)


def context(url: str, header: dict[str, str], asked: list[str]) -> list[float]:
    client = connect(url)
    return [
        timed_post(client, "/v1/rag/context", {"query": q, "collection": "docs"}, header)[0] * 1000
        for q in asked
    ]


def summary(ms: list[float]) -> str:
    ordered = sorted(ms)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {statistics.median(ms):6.2f} ms, p99 {p99:6.2f} ms, max {max(ms):6.2f} ms"


def tokens(root: Path, requests: int) -> None:
    provider = Provider()
    entry = {"embedder": HASH, "llm": {"provider": "extractive"}}
    oidc = {"oidc": {"issuer": provider.issuer, "audience": AUDIENCE}}
    settings = written_settings(root / "tokens", {"docs": entry}, api_key=KEY, port=free_port())
    settings.config.write_text(settings.config.read_text() + f"access: {json.dumps(oidc)}\n")
    hub = Hub.open(settings)
    fill(hub)
    with app_server(settings, hub) as url:
        token = provider.token()
        asked = questions(2 * requests)
        context(url, {"Authorization": f"Bearer {KEY}"}, asked[:20])  # warm both paths
        context(url, {"Authorization": f"Bearer {token}"}, asked[20:40])
        by_key, by_token = [], []
        key_client, token_client = connect(url), connect(url)
        for n in range(requests):
            for client, secret, into, question in (
                (key_client, KEY, by_key, asked[2 * n]),
                (token_client, token, by_token, asked[2 * n + 1]),
            ):
                body = {"query": question, "collection": "docs"}
                header = {"Authorization": f"Bearer {secret}"}
                into.append(timed_post(client, "/v1/rag/context", body, header)[0] * 1000)
        fresh = [
            context(url, {"Authorization": f"Bearer {provider.token()}"}, [q])[0]
            for q in asked[:50]
        ]
    hub.close()
    print(f"tokens: /v1/rag/context, {requests} requests each, alternating (1,000 chunks, hash)")
    print(f"  key                  {summary(by_key)}")
    print(f"  token (reused)       {summary(by_token)}")
    print(
        f"  token / key p50      {statistics.median(by_token) / statistics.median(by_key):.3f}x (want <= 1.05x)"
    )
    print(f"  a fresh token's first request: {summary(fresh)}")


class Slow:
    """A qdrant-client whose every call answers `delay` seconds late (a loaded or remote Qdrant)."""

    def __init__(self, client: QdrantClient, delay: float) -> None:
        self._client = client
        self._delay = delay

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._client, name)
        if not callable(found):
            return found

        def late(*args: Any, **kwargs: Any) -> Any:
            time.sleep(self._delay)
            return found(*args, **kwargs)

        return late


def readers(root: Path, requests: int, delay_ms: float) -> None:
    client = Slow(QdrantClient(location=":memory:"), delay_ms / 1000)
    guard = threading.RLock()
    entry = {"embedder": HASH, "llm": {"provider": "extractive"}}
    writer_port = free_port()

    def settings(node: str, role: str) -> Settings:
        made = written_settings(root / node, {"docs": entry}, api_key=KEY, port=free_port())
        return made.model_copy(update={
            "qdrant_url": "http://qdrant.bench:6333", "role": role,
            "writer_url": f"http://127.0.0.1:{writer_port}"})  # fmt: skip

    def hub(node_settings: Settings) -> Hub:
        store = RemoteStore.sharing(client, guard, "qdrant (one slow in-memory client)")
        return Hub.open(node_settings, store=store)

    writer_settings = settings("writer", "writer").model_copy(update={"port": writer_port})
    writer = hub(writer_settings)
    results: dict[str, list[float]] = {}
    with app_server(writer_settings, writer):
        fill(writer)
        reader_settings = settings("reader", "reader")
        reader = hub(reader_settings)
        with app_server(reader_settings, reader) as url:
            context(url, {"Authorization": f"Bearer {KEY}"}, questions(10))
            for name, renew in (
                ("on requests (before)", False),
                ("renewed off requests (now)", True),
            ):
                _renewal(reader, renew)
                results[name] = _paced(url, requests)
            _renewal(reader, True)
        reader.close()
    writer.close()
    print(f"readers: GET /v1/models on a reader, ~20 a second, Qdrant {delay_ms:g} ms late a call")
    for name, ms in results.items():
        print(f"  refreshes {name:28} {summary(ms)}")


def _renewal(reader: Hub, on: bool) -> None:
    """The reader's keys and pointers renewed in threads (now), or on its requests (before)."""
    if on:
        reader.keyring.start()
        reader.role.start(list(reader.collections.values()))
    else:
        reader.keyring.stop()
        reader.role.stop()


def _paced(url: str, count: int) -> list[float]:
    """`GET /v1/models` round trips (a key's check and the collections' look-ups, nothing
    searched) spread over time, ~20 a second, so the once-a-second refreshes land among them."""
    client = connect(url)
    found = []
    for _ in range(count):
        started = time.perf_counter()
        client.request("GET", "/v1/models", headers={"Authorization": f"Bearer {KEY}"})
        response = client.getresponse()
        response.read()
        found.append((time.perf_counter() - started) * 1000)
        assert response.status == 200, response.status
        time.sleep(0.05)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--delay-ms", type=float, default=20.0)
    parser.add_argument("--skip", choices=["tokens", "readers"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-tokens-") as tmp:
        if args.skip != "tokens":
            tokens(Path(tmp), args.requests)
        if args.skip != "readers":
            readers(Path(tmp), args.requests, args.delay_ms)
    print(machine_line())


if __name__ == "__main__":
    main()
