"""The relay of `rag-hub mcp` on its own: whatever keeps a request from the hub (nothing listening,
a server that is not a hub, a line that is not JSON) is that request's JSON-RPC error in the hub's
words, and the relay reads on. Through the SDK's client: tests/mcp/test_mcp_stdio.py."""

from __future__ import annotations

import io
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from rag_api.mcp.relay import relay
from tests.conftest import free_port

PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}  # nobody waits for it


def relayed(url: str, *lines: str) -> list[dict[str, Any]]:
    out = io.StringIO()
    relay(url, None, "Start it.", io.StringIO("\n".join(lines) + "\n"), out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_nothing_listening_is_each_request_s_error_and_the_relay_reads_on(capsys) -> None:
    port = free_port()
    answers = relayed(
        f"http://127.0.0.1:{port}/mcp",
        "not json",
        json.dumps(LIST),
        json.dumps(INITIALIZED),
        "",
        json.dumps(PING),
    )
    assert [a["id"] for a in answers] == [None, 1, 2]
    assert answers[0]["error"]["code"] == -32700
    assert answers[0]["error"]["message"].startswith("INVALID_REQUEST: not a JSON-RPC message")
    for answer in answers[1:]:
        said = answer["error"]["message"]
        assert said.startswith(
            f"UPSTREAM_UNAVAILABLE: the rag-hub server at http://127.0.0.1:{port} unavailable: "
            "ConnectError"
        ), said
        assert said.endswith(". Start it."), said
    assert "UPSTREAM_UNAVAILABLE" in capsys.readouterr().err  # the notification's, in the log


def answering(status: int, content_type: str, body: bytes) -> type[BaseHTTPRequestHandler]:
    """A stand-in server (not ours) that answers every POST the same."""

    class Answering(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    return Answering


def relayed_to(handler: type[BaseHTTPRequestHandler], *lines: str) -> tuple[str, Any]:
    server = HTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        return url, relayed(f"{url}/mcp", *lines)
    finally:
        server.shutdown()


def test_a_server_that_is_not_a_hub_is_named_as_such() -> None:
    url, (answer,) = relayed_to(
        answering(200, "text/html", b"<html>a site</html>"), json.dumps(PING)
    )
    said = answer["error"]["message"]
    assert said.startswith(f"UPSTREAM_UNAVAILABLE: the server at {url} unavailable: HTTP 200"), said
    assert "is it a rag-hub server (RAG_URL, --url)?" in said


def test_a_refused_key_is_the_request_s_error_and_never_an_answer_to_a_notification() -> None:
    """The hub's 401 is a JSON-RPC error for a request; for a notification, which has no answer,
    nothing reaches the client (the hub's error body used to be written as if it were one)."""
    refused = b'{"error": {"code": "UNAUTHORIZED", "message": "missing or invalid bearer token"}}'
    _, answers = relayed_to(
        answering(401, "application/json", refused),
        json.dumps(INITIALIZED),
        "5",
        json.dumps(PING),
    )
    assert answers == [
        {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32600, "message": "INVALID_REQUEST: a JSON-RPC message is an object"}},
        {"jsonrpc": "2.0", "id": 2, "error": {
            "code": -32000, "message": "UNAUTHORIZED: missing or invalid bearer token (the key "
            "comes from --key, RAG_KEY, else RAG_API_KEY)"}},
    ]  # fmt: skip
