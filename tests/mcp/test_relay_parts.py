"""The relay of `rag-hub mcp` (rag_api.mcp.relay) against a stand-in server on loopback that
records what it is sent and answers what each test scripts: each line posted with the key and
the headers MCP asks for, the protocol version the hub chose sent from then on, answers written
one compact line each (JSON or server-sent events), nothing for what has no answer, and every
refusal or odd answer turned into that request's JSON-RPC error in the hub's words."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from rag_api.mcp.relay import relay

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
VERSION = "2025-06-18"


class StandIn:
    """A server (not ours) that answers each POST with the next of `answers` (status, content
    type or None, body) and keeps each request's headers (names lower-cased) and body."""

    def __init__(self) -> None:
        self.answers: list[tuple[int, str | None, bytes]] = []
        self.requests: list[tuple[dict[str, str], Any]] = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                headers = {name.lower(): value for name, value in self.headers.items()}
                stand_in.requests.append((headers, json.loads(body)))
                status, content_type, answer = stand_in.answers.pop(0)
                self.send_response(status)
                if content_type:
                    self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.hub = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True).start()

    def answer(self, status: int, content_type: str | None, body: Any) -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.answers.append((status, content_type, raw))


class Flushed(io.StringIO):
    """stdout that remembers what had been written at each flush."""

    def __init__(self) -> None:
        super().__init__()
        self.flushes: list[str] = []

    def flush(self) -> None:
        self.flushes.append(self.getvalue())


@pytest.fixture
def stand_in() -> Iterator[StandIn]:
    server = StandIn()
    yield server
    server.server.shutdown()
    server.server.server_close()


def relayed(url: str, *lines: Any, key: str | None = None, advice: str = "Start it.") -> Flushed:
    """What the relay writes for `lines` (messages as JSON, strings as they are)."""
    out = Flushed()
    sent = [line if isinstance(line, str) else json.dumps(line) for line in lines]
    relay(url, key, advice, io.StringIO("\n".join(sent) + "\n"), out)
    return out


def written(out: Flushed) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_each_message_is_posted_with_the_key_and_each_answer_is_a_flushed_compact_line(
    stand_in,
) -> None:
    hello = {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": VERSION, "capabilities": {}}}
    pong = {"jsonrpc": "2.0", "id": 2, "result": {}}
    stand_in.answer(200, "application/json", hello)
    stand_in.answer(200, "application/json", pong)
    out = relayed(f"{stand_in.hub}/mcp", INITIALIZE, "", "   ", PING, key="k-secret")
    first = json.dumps(hello, separators=(",", ":")) + "\n"
    assert out.getvalue() == first + json.dumps(pong, separators=(",", ":")) + "\n"
    assert out.flushes == [first, out.getvalue()]
    assert [body for _, body in stand_in.requests] == [INITIALIZE, PING]  # blank lines: nothing
    for headers, _ in stand_in.requests:
        assert headers["authorization"] == "Bearer k-secret"
        assert headers["accept"] == "application/json, text/event-stream"
        assert headers["content-type"] == "application/json"
    assert "mcp-protocol-version" not in stand_in.requests[0][0]
    assert stand_in.requests[1][0]["mcp-protocol-version"] == VERSION


def test_without_a_key_no_authorization_is_sent_and_an_error_answer_sets_no_version(
    stand_in,
) -> None:
    refused = {"jsonrpc": "2.0", "id": 2, "error": {"code": -32601, "message": "no such method"}}
    stand_in.answer(200, "application/json", refused)
    stand_in.answer(200, "application/json", {"jsonrpc": "2.0", "id": 2, "result": {}})
    assert written(relayed(f"{stand_in.hub}/mcp", PING, PING))[0] == refused
    for headers, _ in stand_in.requests:
        assert "authorization" not in headers and "mcp-protocol-version" not in headers


def test_answers_as_server_sent_events_are_each_written_as_a_line(stand_in) -> None:
    events = (
        b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress"}\n\n'
        b'event: message\ndata:{"jsonrpc":"2.0","id":2,"result":{}}\n\n'  # no space: as valid
    )
    stand_in.answer(200, "text/event-stream; charset=utf-8", events)
    assert written(relayed(f"{stand_in.hub}/mcp", PING)) == [
        {"jsonrpc": "2.0", "method": "notifications/progress"},
        {"jsonrpc": "2.0", "id": 2, "result": {}},
    ]


def test_an_accepted_notification_or_an_empty_answer_writes_nothing(stand_in) -> None:
    stand_in.answer(202, "application/json", {"accepted": True})
    stand_in.answer(200, "application/json", b"")
    stand_in.answer(200, "application/json", {"jsonrpc": "2.0", "id": 2, "result": {}})
    assert written(relayed(f"{stand_in.hub}/mcp", INITIALIZED, PING, PING)) == [
        {"jsonrpc": "2.0", "id": 2, "result": {}}
    ]


@pytest.mark.parametrize(
    ("status", "content_type", "body", "error"),
    [
        (400, "application/json",
         {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Bad Request"}},
         {"code": -32600, "message": "Bad Request"}),
        (401, "application/json",
         {"error": {"code": "UNAUTHORIZED", "message": "missing or invalid bearer token"}},
         {"code": -32000, "message": "UNAUTHORIZED: missing or invalid bearer token (the key "
          "comes from --key, RAG_KEY, else RAG_API_KEY)"}),
        (403, "application/problem+json",
         {"error": {"code": "FORBIDDEN", "message": "this key may not"}},
         {"code": -32000, "message": "FORBIDDEN: this key may not"}),
        (503, "application/json", {"error": {"message": "starting"}},
         {"code": -32000, "message": "ERROR: starting"}),
        (500, "application/json", {"error": {"code": "X"}},
         {"code": -32000, "message": "HTTP 500 from the server"}),
        (500, "application/json", {"error": "broken"},
         {"code": -32000, "message": "HTTP 500 from the server"}),
        (502, "application/json", ["not", "an", "object"],
         {"code": -32000, "message": "HTTP 502 from the server"}),
        (500, "text/plain", b"Internal Server Error",
         {"code": -32000, "message": "HTTP 500 from the server"}),
        (500, None, b"Internal Server Error",
         {"code": -32000, "message": "HTTP 500 from the server"}),
    ],
)  # fmt: skip
def test_a_refused_request_is_its_own_json_rpc_error(
    stand_in, status, content_type, body, error
) -> None:
    stand_in.answer(status, content_type, body)
    assert written(relayed(f"{stand_in.hub}/mcp", PING)) == [
        {"jsonrpc": "2.0", "id": 2, "error": error}
    ]


def test_a_refused_notification_is_only_logged(stand_in, capsys) -> None:
    refused = {"error": {"code": "UNAUTHORIZED", "message": "see http://ops:pw@hub.example/keys"}}
    stand_in.answer(401, "application/json", refused)
    stand_in.answer(200, "application/json", {"jsonrpc": "2.0", "id": 2, "result": {}})
    assert written(relayed(f"{stand_in.hub}/mcp", INITIALIZED, PING)) == [
        {"jsonrpc": "2.0", "id": 2, "result": {}}
    ]
    assert capsys.readouterr().err == (
        "rag-hub mcp: UNAUTHORIZED: see http://***@hub.example/keys (the key comes from --key, "
        "RAG_KEY, else RAG_API_KEY)\n"
    )


@pytest.mark.parametrize(
    ("status", "content_type", "body", "seen"),
    [
        (200, "text/html", b"<html>a site</html>", "HTTP 200 with a text/html body"),
        (200, None, b"plain words", "HTTP 200 with a no body"),
        (500, "application/json", b"{not json", "HTTP 500 with a application/json body"),
        (200, "text/event-stream", b"data: {not json\n\n", "HTTP 200 with a text/event-stream body"),
    ],
)  # fmt: skip
def test_an_answer_that_is_not_mcp_names_the_server_as_perhaps_not_a_hub(
    stand_in, status, content_type, body, seen
) -> None:
    stand_in.answer(status, content_type, body)
    (answer,) = written(relayed(f"{stand_in.hub}/mcp", PING))
    assert answer == {"jsonrpc": "2.0", "id": 2, "error": {"code": -32000, "message": (
        f"UPSTREAM_UNAVAILABLE: the server at {stand_in.hub} unavailable: {seen} that is not "
        "MCP: is it a rag-hub server (RAG_URL, --url)?")}}  # fmt: skip


def test_lines_that_are_not_json_rpc_messages_are_errors_without_an_id(stand_in) -> None:
    answers = written(relayed(f"{stand_in.hub}/mcp", "{oops", "5", "[1, 2]"))
    assert [a["id"] for a in answers] == [None, None, None]
    assert answers[0]["error"] == {
        "code": -32700,
        "message": "INVALID_REQUEST: not a JSON-RPC message: Expecting property name enclosed in "
        "double quotes: line 1 column 2 (char 1)",
    }
    for answer in answers[1:]:
        assert answer["error"] == {
            "code": -32600,
            "message": "INVALID_REQUEST: a JSON-RPC message is an object",
        }
    assert stand_in.requests == []


def test_a_hub_that_does_not_answer_is_named_with_the_advice_and_no_password(capsys) -> None:
    with ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler) as closed:
        port = closed.server_port  # nothing listens once it is closed
    url = f"http://ops:pw@127.0.0.1:{port}/mcp"
    out = relayed(url, PING, INITIALIZED, advice="Start it (see http://ops:pw@wiki/hub).")
    (answer,) = written(out)
    said = answer["error"]["message"]
    assert answer["id"] == 2 and answer["error"]["code"] == -32000
    assert said.startswith(
        f"UPSTREAM_UNAVAILABLE: the rag-hub server at http://***@127.0.0.1:{port} unavailable: "
        "ConnectError: "
    ), said
    assert said.endswith(". Start it (see http://***@wiki/hub).") and "pw" not in said
    logged = capsys.readouterr().err
    assert logged.startswith("rag-hub mcp: UPSTREAM_UNAVAILABLE: the rag-hub server at http://***@")
    assert "pw" not in logged and logged.count("\n") == 1
