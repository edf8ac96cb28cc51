"""`rag-hub mcp` through a running hub: each JSON-RPC message a desktop client writes on stdin
goes to the server's /mcp (stateless, JSON answers) with the key, and its answer back on stdout,
one line each. The server checks the key and runs the tools; nothing is decided here."""

from __future__ import annotations

import json
import sys
from typing import IO, Any

import httpx

from rag_api.errors import UpstreamUnavailable

VERSION_HEADER = "mcp-protocol-version"


def relay(
    url: str, key: str | None, stdin: IO[str] = sys.stdin, stdout: IO[str] = sys.stdout
) -> None:
    """Relay stdin to `url` (the server's /mcp) until stdin closes."""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    with httpx.Client(headers=headers, timeout=httpx.Timeout(300, connect=5)) as http:
        for line in stdin:
            if not line.strip():
                continue
            message = json.loads(line)
            for answer in _post(http, url, message):
                if "protocolVersion" in (answer.get("result") or {}):  # initialize's answer
                    http.headers[VERSION_HEADER] = answer["result"]["protocolVersion"]
                stdout.write(json.dumps(answer, separators=(",", ":")) + "\n")
                stdout.flush()


def _post(http: httpx.Client, url: str, message: dict[str, Any]) -> list[dict[str, Any]]:
    """The server's answers to one message (none for a notification)."""
    try:
        response = http.post(url, content=json.dumps(message))
    except httpx.HTTPError as exc:
        raise UpstreamUnavailable(f"the rag-hub server at {url}: {exc}") from exc
    if response.status_code == 202 or not response.content:
        return []
    if response.status_code >= 400 and "id" in message:
        error = (
            response.json().get("error", {})
            if response.headers.get("content-type", "").startswith("application/json")
            else {}
        )
        text = error.get("message") if isinstance(error, dict) else None
        return [{"jsonrpc": "2.0", "id": message["id"],
                 "error": {"code": -32000, "message": text or f"HTTP {response.status_code}"}}]  # fmt: skip
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return [
            json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")
        ]
    return [response.json()]
