"""A small client of the hub's /v1/rag API for the voice pipeline (sync `RagClient`, async
`AsyncRagClient`), with `inject()`: retrieved context into a chat turn, never an exception."""

from __future__ import annotations

import functools
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, Literal, TypeVar

import httpx

log = logging.getLogger("rag_api.client")
InjectAs = Literal["system", "user"]
Message = dict[str, Any]
TEXT_PARTS = ("text", "input_text")  # chat-completions and Realtime content part types


class RagClientError(Exception):
    """The hub answered with an error (`status`, `code` from its error body) or not at all."""

    def __init__(self, status: int | None, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}" if status is None else f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


@dataclass(frozen=True)
class _Call:
    method: str
    path: str
    json: dict[str, Any] | None = None
    params: dict[str, Any] | None = None


R = TypeVar("R")  # what a call gives: the answer (RagClient) or an awaitable of it (AsyncRagClient)
M = TypeVar("M")  # what inject() gives: the messages, or an awaitable of them


class _Api(ABC, Generic[R, M]):
    """What both clients share: every call's request and how it is decoded, and the injection;
    each client only sends (`request`, `_inject`), blocking or awaited."""

    transport: type[httpx.Client] | type[httpx.AsyncClient]

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        collection: str | None = None,
        timeout: float = 30.0,
        inject_timeout: float = 2.0,
        http: Any = None,
    ) -> None:
        """`collection` is sent with every call (else the hub's default); `inject_timeout` bounds
        the context request of `inject`; `http` is an httpx client to use instead of a new one."""
        self.collection = collection
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.inject_timeout = inject_timeout
        self.http = http or self.transport(base_url=base_url, timeout=timeout)

    @abstractmethod
    def request(self, call: _Call, timeout: float | None = None) -> R:
        """Send one call; the hub's error (or a network failure) raises RagClientError."""

    @abstractmethod
    def _inject(self, turn: _Turn) -> M:
        """The turn's context request sent, its answer injected; any failure: the turn unchanged."""

    def status(self) -> R:
        return self.request(_Call("GET", "/v1/rag/status", params=self._body()))

    def search(
        self,
        query: str,
        top_k: int | None = None,
        threshold: float | None = None,
        filters: Mapping[str, Any] | None = None,
    ) -> R:
        """POST /v1/rag/search: the chunks the injection would use, with cosine scores;
        `filters`: source_prefix, metadata, types, min_quality (docs/labels.md)."""
        body = {"query": query, "top_k": top_k, "threshold": threshold, "filters": filters}
        return self.request(self._post("search", **body))

    def context(
        self,
        query: str,
        top_k: int | None = None,
        threshold: float | None = None,
        language: str | None = None,
        timeout: float | None = None,
        filters: Mapping[str, Any] | None = None,
    ) -> R:
        """POST /v1/rag/context: {"block", "results", "injected"}."""
        return self.request(self._context(query, top_k, threshold, language, filters), timeout)

    def prefetch(
        self,
        query: str,
        top_k: int | None = None,
        threshold: float | None = None,
        language: str | None = None,
        filters: Mapping[str, Any] | None = None,
    ) -> R:
        """POST /v1/rag/context with `"prefetch": true` (202, the work goes on in the hub): the
        same context() or inject() soon after answers from it (docs/voice-admin.md)."""
        call = self._context(query, top_k, threshold, language, filters)
        return self.request(replace(call, json={**(call.json or {}), "prefetch": True}))

    def add_document(self, text: str, source: str | None = None, **fields: Any) -> R:
        """POST /v1/rag/add/document (metadata, persist, dynamic as keywords)."""
        return self.request(self._post("add/document", text=text, source=source, **fields))

    def add_chunks(self, items: list[dict[str, Any]], **fields: Any) -> R:
        return self.request(self._post("add/chunks", items=items, **fields))

    def upsert_document(self, source: str, text: str, **fields: Any) -> R:
        """POST /v1/rag/upsert/document: atomic replace ("" deletes)."""
        return self.request(self._post("upsert/document", source=source, text=text, **fields))

    def remove(self, source_prefix: str, exact: bool = False) -> R:
        return self.request(self._post("remove", source_prefix=source_prefix, exact=exact))

    def inject(
        self,
        messages: Sequence[Message],
        query: str | None = None,
        inject_as: InjectAs = "system",
        top_k: int | None = None,
        threshold: float | None = None,
        language: str | None = None,
        turn_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
    ) -> M:
        """The messages with the retrieved context added; unchanged on any failure (logged)."""
        context = functools.partial(
            self._context, top_k=top_k, threshold=threshold, language=language, filters=filters
        )
        return self._inject(_Turn(messages, query, inject_as, turn_id, context))

    def _send_args(self, call: _Call, timeout: float | None) -> dict[str, Any]:
        extra = {"timeout": timeout} if timeout is not None else {}
        return {"json": call.json, "params": call.params, "headers": self.headers, **extra}

    def _body(self, **fields: Any) -> dict[str, Any]:
        body = {key: value for key, value in fields.items() if value is not None}
        if self.collection is not None:
            body.setdefault("collection", self.collection)
        return body

    def _post(self, path: str, **fields: Any) -> _Call:
        return _Call("POST", f"/v1/rag/{path}", self._body(**fields))

    def _context(
        self,
        query: str,
        top_k: int | None,
        threshold: float | None,
        language: str | None,
        filters: Mapping[str, Any] | None = None,
    ) -> _Call:
        return self._post(
            "context",
            query=query,
            top_k=top_k,
            threshold=threshold,
            language=language,
            filters=filters,
        )

    @staticmethod
    def _decode(response: httpx.Response) -> dict[str, Any]:
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.is_success and isinstance(data, dict):
            return data
        error = data.get("error") if isinstance(data, dict) else None
        if isinstance(error, dict):
            code, message = str(error.get("code")), str(error.get("message"))
        else:
            code, message = f"HTTP_{response.status_code}", response.text[:200]
        raise RagClientError(response.status_code, code, message)

    @staticmethod
    def _unreachable(exc: httpx.HTTPError) -> RagClientError:
        return RagClientError(None, "UNREACHABLE", f"{type(exc).__name__}: {exc}")


@dataclass(frozen=True)
class _Turn:
    """One inject() call: what to search for, and where its answer goes in the messages."""

    messages: Sequence[Message]
    query: str | None
    inject_as: InjectAs
    turn_id: str | None  # for the log lines only
    context: Callable[[str], _Call]  # the context request for a query

    @property
    def search_text(self) -> str | None:
        """The query, else the last user message's text; None when it is blank."""
        query = self.query if self.query is not None else last_user_text(self.messages)
        return query if query and query.strip() else None

    def context_call(self) -> _Call | None:
        """The request to send; None when the turn has nothing to search for."""
        query = self.search_text
        return self.context(query) if query else None

    def answered(self, result: dict[str, Any] | None) -> list[Message]:
        """The messages with the hub's block added (`result` None: nothing was asked)."""
        if result is None:
            return list(self.messages)
        if not result.get("injected"):
            log.info(
                "RAG: no relevant chunk for turn=%s (query=%r)", self.turn_id, self.search_text
            )
            return list(self.messages)
        found = "; ".join(
            f"{r['source']}#c{r['chunk_index']}({r['score']:.2f})" for r in result["results"]
        )
        log.info(
            "RAG: injected %d chunks for turn=%s — %s", result["injected"], self.turn_id, found
        )
        return inject_block(self.messages, result["block"], self.inject_as)

    def failed(self, exc: Exception) -> list[Message]:
        log.warning("RAG search failed for turn=%s: %s", self.turn_id, exc)
        return list(self.messages)


class RagClient(_Api[dict[str, Any], list[Message]]):
    """Blocking client; `inject` is safe to call inside a voice turn."""

    transport = httpx.Client

    def request(self, call: _Call, timeout: float | None = None) -> dict[str, Any]:
        try:
            response = self.http.request(call.method, call.path, **self._send_args(call, timeout))
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc
        return self._decode(response)

    def _inject(self, turn: _Turn) -> list[Message]:
        try:
            call = turn.context_call()
            return turn.answered(self.request(call, self.inject_timeout) if call else None)
        except Exception as exc:  # nothing may break the voice turn
            return turn.failed(exc)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> RagClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncRagClient(_Api[Awaitable[dict[str, Any]], Awaitable[list[Message]]]):
    """The asyncio twin of RagClient: the same calls, each awaited."""

    transport = httpx.AsyncClient

    async def request(self, call: _Call, timeout: float | None = None) -> dict[str, Any]:
        try:
            response = await self.http.request(
                call.method, call.path, **self._send_args(call, timeout)
            )
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc
        return self._decode(response)

    async def _inject(self, turn: _Turn) -> list[Message]:
        try:
            call = turn.context_call()
            return turn.answered(await self.request(call, self.inject_timeout) if call else None)
        except Exception as exc:  # nothing may break the voice turn
            return turn.failed(exc)

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> AsyncRagClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def last_user_text(messages: Sequence[Message]) -> str | None:
    """The text of the last user message (string content or its text parts)."""
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                parts = [p.get("text", "") for p in content if p.get("type") in TEXT_PARTS]
                return " ".join(p for p in parts if p) or None
            return None
    return None


def inject_block(messages: Sequence[Message], block: str, inject_as: InjectAs) -> list[Message]:
    """A new list: `block` as a system message after the leading ones, or appended to the last
    user message (a text part of the same kind when its content is a list of parts)."""
    result = list(messages)
    if inject_as == "system":
        at = 0
        while at < len(result) and result[at].get("role") == "system":
            at += 1
        result.insert(at, {"role": "system", "content": block})
        return result
    if inject_as != "user":
        raise ValueError(f"inject_as must be 'system' or 'user', not {inject_as!r}")
    for n in range(len(result) - 1, -1, -1):
        if result[n].get("role") == "user":
            content = result[n].get("content")
            if isinstance(content, list):
                kind = next((p["type"] for p in content if p.get("type") in TEXT_PARTS), "text")
                content = [*content, {"type": kind, "text": block}]
            else:
                content = f"{content or ''}\n\n{block}".lstrip()
            result[n] = {**result[n], "content": content}
            return result
    result.append({"role": "user", "content": block})
    return result
