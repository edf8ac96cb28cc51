"""`rag-hub mcp` through a running hub: each JSON-RPC message a desktop client writes on stdin
goes to the server's /mcp (stateless, JSON answers) with the key, and its answer back on stdout,
one line each. The server checks the key and runs the tools; nothing is decided here.

Whatever goes wrong on the way (the hub down or restarting, an address that is not a hub, a line
that is not JSON) is answered to that request as a JSON-RPC error in the hub's words (`CODE:
message`, saying what to do), and the relay reads on: the client's next request reaches the hub
once it is back. A client told nothing but "connection closed" cannot help its user."""

from __future__ import annotations

import json
import sys
from typing import IO, Any

import httpx

from rag_api.errors import InvalidRequest, RagError, UpstreamUnavailable, redact

VERSION_HEADER = "mcp-protocol-version"
SERVER_ERROR = -32000  # JSON-RPC's range for a server's own errors
PARSE_ERROR = -32700
INVALID = -32600


def relay(
    url: str,
    key: str | None,
    advice: str,
    stdin: IO[str] = sys.stdin,
    stdout: IO[str] = sys.stdout,
) -> None:
    """Relay stdin to `url` (the server's /mcp) until stdin closes; `advice` says what to do
    when the server does not answer."""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    with httpx.Client(headers=headers, timeout=httpx.Timeout(300, connect=5)) as http:
        for line in stdin:
            if not line.strip():
                continue
            for answer in _answers(http, url, line, advice):
                if "protocolVersion" in (answer.get("result") or {}):  # initialize's answer
                    http.headers[VERSION_HEADER] = answer["result"]["protocolVersion"]
                stdout.write(json.dumps(answer, separators=(",", ":")) + "\n")
                stdout.flush()


def _answers(http: httpx.Client, url: str, line: str, advice: str) -> list[dict[str, Any]]:
    """The answers to one line: the server's, or the error that kept it from answering (none
    for a notification: nobody waits for it)."""
    try:
        message = json.loads(line)
    except ValueError as exc:
        return [_error(None, InvalidRequest(f"not a JSON-RPC message: {exc}"), PARSE_ERROR)]
    if not isinstance(message, dict):
        return [_error(None, InvalidRequest("a JSON-RPC message is an object"), INVALID)]
    try:
        return _post(http, url, message, advice)
    except RagError as exc:
        if "id" in message:
            return [_error(message["id"], exc)]
        _log(f"{exc.code}: {exc.message}")
        return []


def _post(
    http: httpx.Client, url: str, message: dict[str, Any], advice: str
) -> list[dict[str, Any]]:
    """The server's answers to one message (none for a notification)."""
    hub = url.removesuffix("/mcp")
    try:
        response = http.post(url, content=json.dumps(message))
    except httpx.HTTPError as exc:
        down = UpstreamUnavailable(f"the rag-hub server at {hub}", f"{type(exc).__name__}: {exc}")
        down.message = f"{down.message}. {advice}"
        raise down from exc
    if response.status_code == 202 or not response.content:
        return []
    try:
        if response.status_code >= 400:
            refusal = _refusal(response)
            if "id" not in message:  # a refused notification: only the log can say so
                _log(refusal["message"])
                return []
            return [{"jsonrpc": "2.0", "id": message["id"], "error": refusal}]
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            return [json.loads(line[5:]) for line in response.text.splitlines()
                    if line.startswith("data:")]  # fmt: skip
        return [response.json()]
    except ValueError:
        raise UpstreamUnavailable(
            f"the server at {hub}",
            f"HTTP {response.status_code} with a {response.headers.get('content-type', 'no')} "
            "body that is not MCP: is it a rag-hub server (RAG_URL, --url)?",
        ) from None


def _refusal(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC error of a refused request: the hub's `CODE: message` (a 401 for the key),
    or the SDK's own JSON-RPC error as it is."""
    body = response.json() if "json" in response.headers.get("content-type", "") else {}
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), int):
        return error
    if isinstance(error, dict) and error.get("message"):
        said = f"{error.get('code', 'ERROR')}: {error['message']}"
        if response.status_code == 401:
            said += " (the key comes from --key, RAG_KEY, else RAG_API_KEY)"
        return {"code": SERVER_ERROR, "message": said}
    return {"code": SERVER_ERROR, "message": f"HTTP {response.status_code} from the server"}


def _log(said: str) -> None:
    print(f"rag-hub mcp: {redact(said)}", file=sys.stderr)  # stderr: the client's log


def _error(id: Any, exc: RagError, code: int = SERVER_ERROR) -> dict[str, Any]:
    message = redact(f"{exc.code}: {exc.message}")
    return {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}
