"""Shared base of the fake upstreams: a real threaded HTTP server with a request log and knobs."""

from __future__ import annotations

import json
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Generator
from contextlib import suppress
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qsl, urlsplit


@dataclass(frozen=True)
class Request:
    """One recorded request: lower-cased header names, body parsed from JSON (else raw text)."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


@dataclass(frozen=True)
class Stream:
    """A chunked response whose byte chunks are generated lazily while being written."""

    content_type: str
    chunks: Generator[bytes]


# (status, payload): a dict or list is sent as JSON, a str as text/plain, a Stream chunked.
Response = tuple[int, Any]


class Reject(Exception):
    """Raised by a route or guard to answer with `response` (usually from `FakeServer.error`)."""

    def __init__(self, response: Response) -> None:
        super().__init__(response)
        self.response = response


def words(text: str) -> int:
    """Deterministic token count: whitespace-separated words."""
    return len(text.split())


def split_pieces(text: str) -> list[str]:
    """About one word per piece, whitespace kept, so joining the pieces gives the text back."""
    return re.split(r"(?<=\s)(?=\S)", text) if text else []


def message_text(content: Any) -> str:
    """Text of a chat message's content: a string or a list of OpenAI content parts."""
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def default_reply(body: dict) -> str:
    """'Answer to: ' followed by the first 12 words of the last user message."""
    users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
    question = message_text(users[-1].get("content")) if users else ""
    return "Answer to: " + " ".join(question.split()[:12])


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_GET(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {name.lower(): value for name, value in self.headers.items()}
        status, payload = self.server.fake.dispatch(self.command, self.path, headers, raw)
        if isinstance(payload, Stream):
            self._stream(status, payload)
        else:
            self._send(status, payload)

    do_POST = do_PUT = do_DELETE = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    def _send(self, status: int, payload: Any) -> None:
        if isinstance(payload, str):
            data, content_type = payload.encode(), "text/plain; charset=utf-8"
        else:
            data, content_type = json.dumps(payload).encode(), "application/json; charset=utf-8"
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, status: int, stream: Stream) -> None:
        self.send_response(status)
        self.send_header("Content-Type", stream.content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for chunk in stream.chunks:
                self.wfile.write(b"%X\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
        except ConnectionError:  # the client went away: stop generating
            stream.chunks.close()
            self.close_connection = True
            self.server.fake.record_disconnect()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, fake: FakeServer) -> None:
        self.fake = fake
        self.open_sockets: set[socket.socket] = set()
        super().__init__(("127.0.0.1", port), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        self.open_sockets.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        self.open_sockets.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (the hub's timeout, a cut connection) is not the fake's error:
        socketserver would print its traceback into the test run's output."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    def close_connections(self) -> None:
        """Cut kept-alive connections too, so pooled clients see the server gone."""
        for sock in list(self.open_sockets):
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class FakeServer:
    """A real HTTP server on 127.0.0.1 in a background thread; subclasses fill `routes`."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], Callable[[Request], Response]] = {}
        self.reply: str | Callable[[dict], str] = default_reply
        self.token_delay = 0.0
        self.first_token_delay = 0.0  # seconds before the first piece (a model loading, thinking)
        # [{"name", "arguments": {...}}]: the calls a request offering tools is answered with,
        # unless its last message is a tool result (then `reply` answers)
        self.tool_calls: list[dict[str, Any]] | None = None
        self.stall_after: int | None = None  # pieces sent before going silent until `stop`
        self.port = 0
        self.disconnects = 0
        self.disconnected = threading.Event()
        self.pieces_sent = 0
        self.pieces_total = 0
        self._requests: list[Request] = []
        self._failures: list[tuple[int, Any, str | None]] = []
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._stopped = threading.Event()

    @property
    def url(self) -> str:
        """Base URL, e.g. http://127.0.0.1:54321 (the port is kept across stop/start)."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        """Listen (on the previous port after a stop, else a free one) and serve in a thread."""
        if self._server is None:
            self._stopped.clear()
            self._server = _Server(self.port, self)
            self.port = self._server.server_address[1]
            threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def stop(self) -> None:
        """Close the listener and every open connection: clients get connection refused."""
        self._stopped.set()  # a stalled stream ends
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server.close_connections()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def requests(self) -> list[Request]:
        """Snapshot of every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def calls(self, path: str) -> list[Request]:
        """Recorded requests to `path` (without query string)."""
        return [r for r in self.requests if r.path == path]

    def fail(
        self, status: int = 503, times: int = 1, body: Any = None, path: str | None = None
    ) -> None:
        """Answer the next `times` requests (to `path`, or any) with `status` and an error body."""
        with self._lock:
            self._failures += [(status, body, path)] * times

    def error(self, status: int, message: str) -> Response:
        """This upstream's error response shape."""
        return status, {"error": message}

    def guard(self, request: Request) -> None:
        """Hook run before routing (e.g. an API key check); raise Reject to refuse."""

    def calls_for(self, body: dict) -> list[dict[str, Any]] | None:
        """The tool calls that answer this request, if any (see `tool_calls`)."""
        messages = body.get("messages") or []
        answered = bool(messages) and messages[-1].get("role") == "tool"
        return self.tool_calls if self.tool_calls and body.get("tools") and not answered else None

    def reply_text(self, body: dict) -> str:
        """The configured reply for this request body."""
        return self.reply(body) if callable(self.reply) else self.reply

    def pieces(self, text: str) -> Generator[str]:
        """Yield the reply in pieces, sleeping `token_delay` before each; counts pieces sent.
        After `stall_after` pieces, say nothing more until the server stops."""
        parts = split_pieces(text)
        self.pieces_sent, self.pieces_total = 0, len(parts)
        for n, part in enumerate(parts):
            if n == 0 and self.first_token_delay:
                time.sleep(self.first_token_delay)
            if n == self.stall_after:
                self._stopped.wait()
                return
            if self.token_delay:
                time.sleep(self.token_delay)
            yield part
            self.pieces_sent += 1  # resumed only after the writer sent this piece

    def record_disconnect(self) -> None:
        """Count a client that hung up mid-stream."""
        with self._lock:
            self.disconnects += 1
        self.disconnected.set()

    def dispatch(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> Response:
        """Record the request, then apply injected failures, the guard and the route."""
        url = urlsplit(target)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        request = Request(method, url.path, dict(parse_qsl(url.query)), headers, body)
        with self._lock:
            self._requests.append(request)
            failure = next((f for f in self._failures if f[2] in (None, url.path)), None)
            if failure:
                self._failures.remove(failure)
        if failure:
            status, fail_body, _ = failure
            return (
                (status, fail_body)
                if fail_body is not None
                else self.error(status, "injected failure")
            )
        route = self.routes.get((method, url.path))
        try:
            self.guard(request)
            if route is None:
                raise Reject(self.error(404, f"{method} {url.path} not found"))
            if method == "POST" and not isinstance(body, dict):
                raise Reject(self.error(400, "request body must be a JSON object"))
            return route(request)
        except Reject as exc:
            return exc.response
