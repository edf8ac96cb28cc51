"""The benchmarks' HTTP client: the standard library's, on a kept-alive connection (httpx adds
~0.5 ms of its own to a request on this machine), timing each round trip."""

from __future__ import annotations

import json
import time
from http.client import HTTPConnection
from urllib.parse import urlsplit


def connect(url: str, timeout: float = 60) -> HTTPConnection:
    """A connection to the server at base URL `url`, kept alive across requests."""
    return HTTPConnection(urlsplit(url).netloc, timeout=timeout)


def timed_post(
    client: HTTPConnection, path: str, body: dict, headers: dict[str, str] | None = None
) -> tuple[float, bytes]:
    """Seconds of the round trip of one POST of `body` as JSON (with `headers` besides its
    Content-Type), and the answer's bytes; a RuntimeError unless it answers 200."""
    raw = json.dumps(body)
    started = time.perf_counter()
    client.request("POST", path, raw, {"Content-Type": "application/json", **(headers or {})})
    response = client.getresponse()
    answer = response.read()
    elapsed = time.perf_counter() - started
    if response.status != 200:
        raise RuntimeError(f"POST {path} answered {response.status}: {answer[:200]!r}")
    return elapsed, answer
