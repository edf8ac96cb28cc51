"""rag_api.http.hot_reads: the plain reads are served without FastAPI's per-request work, everything else
goes to the route with its body intact, and either way a client gets the same answer."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from typing import Any

import httpx
import pytest

from rag_api.http.hot_reads import HotReads
from rag_api.settings import Settings
from tests.conftest import assert_error_shape, hash_collection, wait_for, write_config
from tests.support.openai_support import REFUND, start_indexed, write_kb

READER = {"Authorization": "Bearer reader-key", "X-Request-ID": "fixed-id"}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    root = tmp_path_factory.mktemp("hot")
    entry = hash_collection(write_kb(root / "kb"), retrieval={"top_k": 10, "threshold": -1})
    config = write_config(root / "collections.yaml", {"docs": entry})
    settings = Settings(
        config=config,
        data_dir=root / "data",
        ollama_url="http://127.0.0.1:9",
        api_key="reader-key",
    )
    hub, server = start_indexed(settings, "docs")
    yield server
    server.stop()
    hub.close()


def without_timings(answer: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in answer.items() if key != "timings_ms"}


SAME = [  # (path, body, headers): served hot, or by the route when the query string says so
    ("/query/docs", {"query": REFUND, "generate": False}, READER),
    ("/query/docs", {"query": REFUND, "generate": False, "mode": "sparse", "top_k": 2}, READER),
    ("/v1/rag/search", {"query": REFUND, "top_k": 3}, READER),
    ("/v1/rag/context", {"query": REFUND}, READER),
    ("/v1/rag/chunks/list", {"query": REFUND}, READER),
    ("/query/nope", {"query": REFUND, "generate": False}, READER),  # 404
    ("/v1/rag/search", {"query": REFUND, "collection": "nope"}, READER),  # 404
    ("/query/docs", {"query": "", "generate": False}, READER),  # 422 from the route
    ("/query/docs", {"query": REFUND, "generate": False, "top_k": 0}, READER),  # 422
    ("/v1/rag/search", {"query": REFUND, "surprise": 1}, READER),  # 422
    ("/query/docs", {"query": REFUND, "generate": False}, {"X-Request-ID": "fixed-id"}),  # 401
]


@pytest.mark.parametrize(("path", "body", "headers"), SAME)
def test_a_client_gets_the_same_answer_either_way(live, path, body, headers) -> None:
    hot = httpx.post(live.url + path, json=body, headers=headers, timeout=60)
    # a query string sends the request to FastAPI's route (which ignores `via`)
    routed = httpx.post(live.url + path + "?via=route", json=body, headers=headers, timeout=60)
    assert hot.status_code == routed.status_code, (hot.text, routed.text)
    assert without_timings(hot.json()) == without_timings(routed.json())
    assert list(hot.json()) == list(routed.json())  # key order too
    assert hot.headers["content-type"] == routed.headers["content-type"]
    assert hot.headers["x-request-id"] == "fixed-id"
    if hot.status_code == 401:
        assert hot.headers["www-authenticate"] == routed.headers["www-authenticate"]


def test_errors_keep_the_one_shape(live) -> None:
    body = {"query": REFUND, "generate": False}
    error = assert_error_shape(
        httpx.post(live.url + "/query/nope", json=body, headers=READER), 404, "COLLECTION_NOT_FOUND"
    )
    assert "nope" in error["message"]


PLAIN = {"query": REFUND, "generate": False}
# a body the model takes, over the limit only by its whitespace
HUGE = json.dumps(PLAIN).encode()[:-1] + b" " * (1024 * 1024) + b"}"
REFUSED = [  # (body, content-type, status, code, message start): a hot path's bodies refused
    (HUGE, "application/json", 413, "PAYLOAD_TOO_LARGE", "request body is larger"),
    (iter([HUGE[:600_000], HUGE[600_000:]]), "application/json", 413, "PAYLOAD_TOO_LARGE", ""),
    (b"{not json", "application/json", 422, "INVALID_REQUEST", "body: invalid JSON"),
    (
        json.dumps({**PLAIN, "filters": {"metadata": {"k": 2**63}}}).encode(),
        "application/json",
        422,
        "INVALID_REQUEST",
        "filters.metadata.k: integer outside the signed 64-bit range",
    ),
    (json.dumps(PLAIN).encode(), "text/csv", 422, "INVALID_REQUEST", "body: "),
]


@pytest.mark.parametrize(("content", "label", "status", "code", "message"), REFUSED)
def test_refused_bodies_get_the_layers_errors(live, content, label, status, code, message):
    headers = {**READER, "content-type": label}
    refused = httpx.post(live.url + "/query/docs", content=content, headers=headers, timeout=60)
    assert assert_error_shape(refused, status, code)["message"].startswith(message)
    assert refused.headers["x-request-id"] == "fixed-id"


def _cases() -> list[tuple[str, Any, dict[str, str]]]:
    """(path, body bytes or a callable making them, headers): every case of SAME and REFUSED."""
    same = [(path, json.dumps(body).encode(), headers) for path, body, headers in SAME]
    chunked = lambda: iter([HUGE[:600_000], HUGE[600_000:]])  # noqa: E731  (no Content-Length)
    refused = [
        ("/query/docs", chunked if isinstance(content, type(iter([]))) else content, label)
        for content, label, *_ in REFUSED
    ]
    return same + [(path, body, {**READER, "content-type": label}) for path, body, label in refused]


_IDS = itertools.count()


@pytest.mark.parametrize(("path", "content", "headers"), _cases())
def test_both_paths_answer_every_case_with_one_status_body_and_log_line(
    live, caplog, path, content, headers
) -> None:
    """Each case sent to the fast path and (by a query string) to FastAPI's route: the same
    status, body and access log line (its latency aside)."""
    caplog.set_level(logging.INFO, logger="rag_api.access")
    request_id = f"parity-{next(_IDS)}"
    headers = {"content-type": "application/json", **headers, "X-Request-ID": request_id}
    answers = []
    for query_string in ("", "?via=route"):
        body = content() if callable(content) else content
        answer = httpx.post(
            live.url + path + query_string, content=body, headers=headers, timeout=60
        )
        answers.append(
            (answer.status_code, answer.headers["content-type"], without_timings(answer.json()))
        )

    def lines() -> list[tuple[Any, ...]] | None:
        mine = [r for r in caplog.records if getattr(r, "request_id", "") == request_id]
        fields = [
            (r.method, r.path, r.route, r.status, r.collection, r.getMessage().split(" ")[:3])
            for r in mine
        ]
        return fields if len(fields) == 2 else None

    hot_line, route_line = wait_for(lines)
    assert answers[0] == answers[1]
    assert hot_line == route_line


def test_an_unlabelled_body_is_read_as_json(live) -> None:
    """curl -d labels a JSON body as a form: answered as JsonBodies relabels it for the route."""
    form = {**READER, "content-type": "application/x-www-form-urlencoded"}
    raw = json.dumps(PLAIN).encode()
    hot = httpx.post(live.url + "/query/docs", content=raw, headers=form, timeout=60)
    routed = httpx.post(live.url + "/query/docs?via=route", content=raw, headers=form, timeout=60)
    assert hot.status_code == routed.status_code == 200
    assert without_timings(hot.json()) == without_timings(routed.json())


def test_hot_requests_get_their_access_log_line(live, caplog) -> None:
    caplog.set_level(logging.INFO, logger="rag_api.access")
    headers = {**READER, "X-Request-ID": "logged-hot-read"}
    assert httpx.post(live.url + "/query/docs", json=PLAIN, headers=headers).status_code == 200

    def line() -> logging.LogRecord | None:
        mine = [r for r in caplog.records if getattr(r, "request_id", "") == "logged-hot-read"]
        return mine[0] if mine else None

    record = wait_for(line)
    assert (record.route, record.status, record.collection) == ("/query/{collection}", 200, "docs")
    assert record.getMessage().startswith("POST /query/docs 200 ")


def test_hot_requests_are_counted_under_their_route(live) -> None:
    def served() -> float:
        text = httpx.get(live.url + "/metrics", headers=READER).text
        prefix = 'rag_http_requests_total{method="POST",route="/v1/rag/context",status="2xx"} '
        line = next((row for row in text.splitlines() if row.startswith(prefix)), prefix + "0")
        return float(line.rsplit(" ", 1)[1])

    before = served()
    for _ in range(3):
        httpx.post(live.url + "/v1/rag/context", json={"query": REFUND}, headers=READER)
    assert served() == before + 3


async def _through(app: Any, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    """(status, body) of one request to `app` in this thread."""
    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "query_string": b"",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    messages = [{"type": "http.request", "body": body, "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    status = sent[0]["status"]
    return status, b"".join(m.get("body", b"") for m in sent[1:])


@pytest.mark.parametrize(
    ("body", "headers", "hot"),
    [
        ({"query": REFUND, "generate": False}, READER, True),
        ({"query": REFUND}, READER, False),  # generated: the route's pool of LLM slots
        ({"query": REFUND, "generate": False, "stream": True}, READER, False),  # streamed
        ({"query": REFUND, "generate": False}, {}, False),  # no key: the route's 401
        ({"query": "", "generate": False}, READER, False),  # the route's 422
    ],
)
def test_only_plain_reads_are_served_here(live, body, headers, hot) -> None:
    received: list[bytes] = []

    async def route(scope, receive, send) -> None:  # stands for the app's own routing
        message = await receive()
        received.append(message["body"])
        await send({"type": "http.response.start", "status": 299, "headers": []})
        await send({"type": "http.response.body", "body": b"route"})

    layer = HotReads(route, max_bytes=1 << 20)
    raw = json.dumps(body).encode()
    headers = {"content-type": "application/json", "content-length": str(len(raw)), **headers}

    status, answer = asyncio.run(_through(_Scoped(layer, live.app), "/query/docs", raw, headers))
    if hot:
        assert status == 200 and json.loads(answer)["sources"]
        assert received == []
    else:
        assert (status, answer) == (299, b"route")
        assert received == [raw]  # the body reaches the route whole


class _Scoped:
    """Puts the live app in the scope, as Starlette does before any middleware runs."""

    def __init__(self, inner: Any, app: Any) -> None:
        self.inner, self.app = inner, app

    async def __call__(self, scope, receive, send) -> None:
        await self.inner({**scope, "app": self.app}, receive, send)


def test_the_hot_reads_are_the_routes_marked_where_they_are_declared(live) -> None:
    """No second table: the layer reads the marked routes' paths and body models from the app."""
    layer = HotReads(live.app, max_bytes=1 << 20)
    layer._learn(live.app)
    served = {
        read.route.path: read.body.__name__
        for read in (*layer.exact.values(), *(read for _, read in layer.prefixed))
    }
    assert served == {
        "/query/{collection}": "QueryBody",
        "/v1/rag/search": "Search",
        "/v1/rag/context": "Context",
        "/v1/rag/chunks/list": "ListChunks",
    }
