"""rag_api.http.forward.ToWriter: a reader sends a write to the writer as it came and streams its
answer back (docs/scaling.md). The writer here is a small ASGI app served by uvicorn on loopback
(a raw socket server where the exact request line matters); the reader is a Starlette app with
ToWriter as its middleware, as create_app adds it, called with a scope and the ASGI messages
recorded: what it sends is what any server in front of it would write to the client."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from rag_api.http.forward import ToWriter, forwarded
from tests.conftest import free_port

BOUND_S = 5.0  # a run of the reader past this is a hang (the timeouts under test are 0.2 s)


# -- the writer --------------------------------------------------------------------------------


@dataclass
class Writer:
    """What the writer was sent, and a switch that lets a held answer go on."""

    url: str
    received: list[dict[str, Any]] = field(default_factory=list)
    go_on: threading.Event = field(default_factory=threading.Event)


async def _held(go_on: threading.Event) -> bool:
    """Waits (without blocking the writer's loop) until the test lets it go on; False past the
    bound."""
    deadline = time.monotonic() + BOUND_S
    while not go_on.is_set():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


def writer_app(writer: Writer) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        writer.received.append({**scope, "body": body})
        path = scope["path"]
        if path == "/v1/jobs/held":  # answers nothing until let go
            await _held(writer.go_on)
        headers = [
            (b"content-type", b"application/json"),
            (b"X-Writer", b"yes"),  # the writer's own header, in its own case
            # hop-by-hop, in any case: about the connection between the writer and the reader
            # (closed after each answer: a test's reader leaves none open behind it)
            (b"Connection", b"close"),
            (b"Keep-Alive", b"timeout=5"),
        ]  # no content-length: uvicorn adds transfer-encoding: chunked, hop-by-hop as well
        await send({"type": "http.response.start", "status": 201, "headers": headers})
        if path == "/v1/jobs/streamed":  # the second piece only once the first reached the client
            await send({"type": "http.response.body", "body": b"first", "more_body": True})
            second = b"second" if await _held(writer.go_on) else b"not streamed"
            await send({"type": "http.response.body", "body": second})
        elif path == "/v1/jobs/cut":  # dies mid-answer: uvicorn drops the connection
            await send({"type": "http.response.body", "body": b'{"jobs": [', "more_body": True})
            raise RuntimeError("the writer died mid-answer")
        else:
            await send({"type": "http.response.body", "body": b'{"ok": true}'})

    return app


@pytest.fixture(scope="module")
def served_writer() -> Iterator[Writer]:
    port = free_port()
    writer = Writer(f"http://127.0.0.1:{port}")
    config = uvicorn.Config(
        writer_app(writer), host="127.0.0.1", port=port, log_level="critical", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the writer did not start"
        time.sleep(0.01)
    yield writer
    writer.go_on.set()
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def writer(served_writer: Writer) -> Iterator[Writer]:
    served_writer.received.clear()
    served_writer.go_on.clear()
    yield served_writer
    served_writer.go_on.set()  # a held answer ends with the test


class RequestLines:
    """A raw HTTP/1.1 server on loopback that records each request line as it came on the wire
    (uvicorn's scope cannot tell `/p` from `/p?`) and answers 204."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self.lines: list[str] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:  # closed
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, rest = data.partition(b"\r\n\r\n")
                if b"transfer-encoding: chunked" in head.lower():
                    while not rest.endswith(b"0\r\n\r\n"):  # the (empty) body's last chunk
                        rest += conn.recv(65536)
                self.lines.append(head.split(b"\r\n")[0].decode("latin-1"))
                conn.sendall(b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n")

    def close(self) -> None:
        self._sock.close()


@pytest.fixture
def request_lines() -> Iterator[RequestLines]:
    server = RequestLines()
    yield server
    server.close()


@pytest.fixture
def black_hole() -> Iterator[str]:
    """A loopback address whose connects hang: a listener that accepts none, its queue full (the
    kernel drops the next SYNs instead of refusing them)."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=0)
    port = listener.getsockname()[1]
    queued = []
    for _ in range(3):
        sock = socket.socket()
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", port))
        queued.append(sock)
    yield f"http://127.0.0.1:{port}"
    for sock in (*queued, listener):
        sock.close()


# -- the reader --------------------------------------------------------------------------------


async def _answered_here(request: Any) -> PlainTextResponse:
    body = (await request.body()).decode()
    return PlainTextResponse("answered by the reader" + (f": {body}" if body else ""))


def reader(writer_url: str, timeout_s: float = 5.0) -> Starlette:
    """A reader: its own routes, ToWriter in front of them as create_app adds it."""
    routes = [
        Route("/v1/rag/search", _answered_here, methods=["POST"]),
        Route("/v1/collections", _answered_here, methods=["GET"]),
        Route("/v1/jobs", _answered_here),  # the hub's routes, though a reader forwards these
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(ToWriter, writer_url=writer_url, timeout_s=timeout_s)],
    )


@dataclass
class Sent:
    """The ASGI messages the reader sent for one request."""

    messages: list[dict[str, Any]]

    @property
    def status(self) -> int:
        return self.messages[0]["status"]

    @property
    def headers(self) -> dict[str, str]:
        return {k.decode().lower(): v.decode() for k, v in self.messages[0].get("headers", [])}

    @property
    def pieces(self) -> list[bytes]:
        return [m.get("body", b"") for m in self.messages[1:]]

    @property
    def body(self) -> bytes:
        return b"".join(self.pieces)


async def _through(
    app: Any,
    path: str,
    method: str = "POST",
    body: list[dict[str, Any]] | None = None,
    on_send: Any = None,
    **scope: Any,
) -> Sent:
    """One request through `app`: `scope` adds keys (query_string, root_path, headers), `body` is
    the http.request messages (one empty one by default)."""
    requests = list(body or [{"type": "http.request", "body": b""}])
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return requests.pop(0) if requests else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if on_send is not None:
            on_send(message)

    full = {"type": "http", "method": method, "path": path, "headers": [], **scope}
    await asyncio.wait_for(app(full, receive, send), BOUND_S)
    return Sent(sent)


def through(app: Any, path: str, **kwargs: Any) -> Sent:
    return asyncio.run(_through(app, path, **kwargs))


def writer_unavailable(sent: Sent) -> str:
    """The 503 WRITER_UNAVAILABLE the client got; its message."""
    assert sent.status == 503, sent.messages
    error = httpx.Response(503, content=sent.body).json()["error"]
    assert error["code"] == "WRITER_UNAVAILABLE", error
    return error["message"]


# -- what reaches the writer -------------------------------------------------------------------


def test_a_write_reaches_the_writer_as_it_came_and_its_answer_comes_back(writer: Writer) -> None:
    sent = through(
        reader(writer.url),
        "/v1/jobs",
        headers=[(b"authorization", b"Bearer the-callers-key"), (b"content-type", b"text/plain")],
        body=[
            {"type": "http.request", "body": b"index ", "more_body": True},
            {"type": "http.request", "body": b"it all"},
        ],  # fmt: skip
    )
    assert (sent.status, sent.body) == (201, b'{"ok": true}')
    [got] = writer.received
    assert (got["method"], got["path"], got["body"]) == ("POST", "/v1/jobs", b"index it all")
    assert (b"authorization", b"Bearer the-callers-key") in got["headers"]


def test_a_read_the_reader_answers_itself_never_reaches_the_writer(writer: Writer) -> None:
    question = [{"type": "http.request", "body": b"refunds?"}]
    sent = through(reader(writer.url), "/v1/rag/search", body=question)
    assert (sent.status, sent.body) == (200, b"answered by the reader: refunds?")
    sent = through(reader(writer.url), "/v1/collections", method="GET")
    assert (sent.status, sent.body) == (200, b"answered by the reader")
    assert writer.received == []


@pytest.mark.parametrize(
    ("method", "path", "to_writer"),
    [
        ("GET", "/v1/collections", False),
        ("HEAD", "/v1/collections", False),
        ("OPTIONS", "/v1/collections/docs", False),
        ("GET", "/v1/jobs", True),  # only the writer holds its jobs, indexer, uploads, sources
        ("GET", "/v1/collections/docs/sources", True),
        ("POST", "/v1/chat/completions", False),  # questions and searches: the reader answers
        ("POST", "/query/docs", False),
        ("POST", "/mcp", False),
        ("POST", "/v1/collections/docs/documents", True),  # a write
        ("PUT", "/v1/rag/kb/doc", True),
        ("DELETE", "/v1/collections/docs", True),
        ("DELETE", "/v1/responses/resp_1", False),  # stored responses are shared
        ("DELETE", "/responses/resp_1", False),
        ("DELETE", "/mcp", False),  # the end of an MCP session the reader holds
        ("POST", "/v1/responses/resp_1/cancel", True),
    ],
)
def test_which_requests_a_reader_sends_to_the_writer(method, path, to_writer) -> None:
    assert forwarded(method, path) is to_writer


def test_the_callers_hop_by_hop_headers_stay_with_the_reader(writer: Writer) -> None:
    headers = [(b"host", b"reader.example"), (b"Keep-Alive", b"timeout=9"), (b"x-caller", b"a")]
    assert through(reader(writer.url), "/v1/jobs", headers=headers).status == 201
    got = {k.decode().lower(): v for k, v in writer.received[0]["headers"]}
    assert got["x-caller"] == b"a"
    assert got["host"] == writer.url.removeprefix("http://").encode()
    assert "keep-alive" not in got


@pytest.mark.parametrize("length", [None, b"8"])  # sent chunked, or with the client's length
def test_a_body_message_without_a_body_is_an_empty_piece(writer: Writer, length) -> None:
    """ASGI lets an http.request message leave `body` out (b"")."""
    headers = [] if length is None else [(b"content-length", length)]
    body = [
        {"type": "http.request", "more_body": True},
        {"type": "http.request", "body": b"the rest", "more_body": True},
        {"type": "http.request"},
    ]
    assert through(reader(writer.url), "/v1/jobs", body=body, headers=headers).status == 201
    assert writer.received[0]["body"] == b"the rest"


def test_a_request_with_no_body_reaches_the_writer_with_none(writer: Writer) -> None:
    assert through(reader(writer.url), "/v1/jobs", body=[{"type": "http.request"}]).status == 201
    assert writer.received[0]["body"] == b""


@pytest.mark.parametrize(
    ("query", "target"),
    [
        (b"state=running&kind=add%20docs", "/v1/jobs?state=running&kind=add%20docs"),
        (b"", "/v1/jobs"),  # no query: no `?` either
        (None, "/v1/jobs"),  # a scope without query_string (ASGI: b"")
    ],
)
def test_the_query_is_forwarded_exactly(request_lines: RequestLines, query, target) -> None:
    scope = {} if query is None else {"query_string": query}
    assert through(reader(request_lines.url), "/v1/jobs", method="GET", **scope).status == 204
    assert request_lines.lines == [f"GET {target} HTTP/1.1"]


@pytest.mark.parametrize(
    ("written", "prefix"),
    [
        ("{}", ""),
        ("{}/", ""),  # a trailing slash, as often written
        ("{}//", ""),
        ("{}/hub/X/", "/hub/X"),  # a writer behind a path: the path stays whole
    ],
)
def test_the_writer_url_leads_the_forwarded_path(request_lines, written, prefix) -> None:
    sent = through(reader(written.format(request_lines.url)), "/v1/jobs/j1", method="GET")
    assert sent.status == 204
    assert request_lines.lines == [f"GET {prefix}/v1/jobs/j1 HTTP/1.1"]


@pytest.mark.parametrize(("root_path", "target"), [("/rag", "/rag/v1/jobs"), (None, "/v1/jobs")])
def test_the_root_path_the_reader_is_mounted_at_leads_the_forwarded_path(
    request_lines: RequestLines, root_path, target
) -> None:
    scope = {} if root_path is None else {"root_path": root_path}  # ASGI: "" when absent
    assert through(reader(request_lines.url), "/v1/jobs", method="GET", **scope).status == 204
    assert request_lines.lines == [f"GET {target} HTTP/1.1"]


# -- what comes back ---------------------------------------------------------------------------


def test_the_writers_headers_come_back_without_the_hop_by_hop_ones(writer: Writer) -> None:
    sent = through(reader(writer.url), "/v1/jobs")
    assert sent.headers["content-type"] == "application/json"
    assert sent.headers["x-writer"] == "yes"
    # Connection and Keep-Alive (sent capitalised) and uvicorn's transfer-encoding describe the
    # writer's own connection: the server in front of the reader frames the answer itself
    assert not {"keep-alive", "transfer-encoding", "connection"} & set(sent.headers)


def test_the_answer_ends_with_an_empty_last_body_message(writer: Writer) -> None:
    sent = through(reader(writer.url), "/v1/jobs")
    assert sent.messages[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
    assert all(m["more_body"] for m in sent.messages[1:-1])


def test_the_answer_streams_each_piece_as_the_writer_sends_it(writer: Writer) -> None:
    def on_send(message: dict[str, Any]) -> None:
        if message.get("body") == b"first":
            writer.go_on.set()  # the writer sends its second piece only now

    sent = through(reader(writer.url), "/v1/jobs/streamed", on_send=on_send)
    assert sent.status == 201
    assert sent.pieces == [b"first", b"second", b""]


def test_the_answer_reaches_an_http_client_whole(writer: Writer) -> None:
    async def fetch() -> httpx.Response:
        transport = httpx.ASGITransport(reader(writer.url))
        async with httpx.AsyncClient(transport=transport, base_url="http://reader") as client:
            return await client.post("/v1/jobs", params={"wait": "1"}, content=b"x")

    response = asyncio.run(fetch())
    assert (response.status_code, response.json()) == (201, {"ok": True})
    assert response.headers["x-writer"] == "yes"
    assert "keep-alive" not in response.headers
    assert writer.received[0]["query_string"] == b"wait=1"


# -- a writer that cannot answer ---------------------------------------------------------------


def test_an_unreachable_writer_is_a_503_naming_it_and_the_reason() -> None:
    port = free_port()  # nothing listens there: the connect is refused
    sent = through(reader(f"http://user:secret@127.0.0.1:{port}/"), "/v1/jobs")
    message = writer_unavailable(sent)
    assert message == (
        f"the writer at http://***@127.0.0.1:{port} unavailable: All connection attempts failed"
    )


def test_a_writer_that_does_not_answer_in_time_is_a_503(writer: Writer) -> None:
    started = time.monotonic()
    sent = through(reader(writer.url, timeout_s=0.2), "/v1/jobs/held")
    assert time.monotonic() - started < 2.0
    # the exception has no text: its kind names the reason
    assert writer_unavailable(sent) == f"the writer at {writer.url} unavailable: ReadTimeout"


def test_a_connect_that_hangs_is_bounded_by_the_timeout(black_hole: str) -> None:
    sent = through(reader(black_hole, timeout_s=0.2), "/v1/jobs")
    assert writer_unavailable(sent) == f"the writer at {black_hole} unavailable: ConnectTimeout"


def test_the_connect_is_bounded_by_5_s_whatever_the_timeout() -> None:
    """A connect either happens at once or not at all: a long RAG_WRITER_TIMEOUT_S (a slow
    write's answer) need not keep a reader waiting on a writer that is gone. (Staging the 5 s
    would cost 5 s: the bound is read where the reader keeps it.)"""
    assert ToWriter(_answered_here, "http://w", 60.0).timeout == httpx.Timeout(60.0, connect=5.0)
    assert ToWriter(_answered_here, "http://w", 2.0).timeout == httpx.Timeout(2.0)


def test_a_writer_dying_mid_answer_ends_the_clients_connection_and_is_logged(
    writer: Writer, caplog: pytest.LogCaptureFixture
) -> None:
    """Once the status went out no 503 can follow: the error goes up to the server, which drops
    the client's connection; the client sees a cut answer, not a complete one."""
    app = reader(writer.url)
    sent: list[dict[str, Any]] = []
    with (
        caplog.at_level(logging.WARNING, logger="rag_api.http.forward"),
        pytest.raises(httpx.HTTPError) as raised,
    ):
        asyncio.run(_through(app, "/v1/jobs/cut", on_send=sent.append))
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    assert sent[0]["status"] == 201 and sent[1] == {
        "type": "http.response.body",
        "body": b'{"jobs": [',
        "more_body": True,
    }
    logged = [r.getMessage() for r in caplog.records if r.name == "rag_api.http.forward"]
    assert logged == [f"the writer's answer to /v1/jobs/cut was cut short: {raised.value}"]
