"""The embedding models behind a server: Ollama's /api/embed and any OpenAI-compatible
/v1/embeddings endpoint (vLLM, Text Embeddings Inference, Infinity, LM Studio, OpenAI).

A batch of texts is cut into requests by the server's limits (rag_api.embedding.server_limits),
sent up to `concurrency` at once (rag_api.embedding.inflight), each retried as
rag_api.embedding.retries says; the rows come back in order. A request the server refuses for
its inputs (400, 413, 422) is split in halves until the one input it refuses is found: that
input fails alone. A request given up (its budget spent) fails its own texts and the requests
not yet sent, so a server that is down costs a sync one budget, not one per request.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
from abc import abstractmethod
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import numpy as np

from rag_api.embedding.devices import Placement
from rag_api.embedding.embedders import Embedded, Embedder, _normalise
from rag_api.embedding.inflight import Deadline, InFlight
from rag_api.embedding.retries import (
    QUERY_RULES,
    REFUSED_STATUS,
    RETRIED_STATUS,
    SHEDDING_STATUS,
    RetryRules,
    asked_pause_s,
    indexing_rules,
    pause_s,
)
from rag_api.embedding.server_limits import ServerLimits, fitted, requests
from rag_api.errors import EmbedderUnavailable
from rag_api.observability.metrics import EMBEDDING_RETRIES

log = logging.getLogger("rag_api.embedding.remote_embedders")
DETAIL_CHARS = 300  # of a server's error body, in a failure's reason
CONNECT_RETRIES = (
    2  # a refused connection: a server restarting, else down (seconds, not the budget)
)


class Refused(Exception):
    """The server refused the request's inputs (400, 413, 422): not worth a retry."""


class GaveUp(Exception):
    """The server did not answer within the batch's budget, or answered what cannot be used."""


class _Call:
    """One embed call: its texts, the rows and failures so far, and whether the server is down."""

    def __init__(self, texts: list[str], rules: RetryRules, query: bool) -> None:
        self.texts = texts
        self.rules = rules
        self.query = query
        self.rows: list[np.ndarray | None] = [None] * len(texts)
        self.failed: dict[int, str] = {}
        self.down: str | None = None
        self.cause: BaseException | None = None  # why the server is down, as it was raised
        self.stopped = threading.Event()
        self.requests = self.retries = 0
        self.server_s = 0.0
        self._lock = threading.Lock()

    def stop(self, reason: str, cause: BaseException | None) -> None:
        with self._lock:
            if self.down is None:
                self.down, self.cause = reason, cause
        self.stopped.set()

    def tally(self, requests: int = 0, retries: int = 0, server_s: float = 0.0) -> None:
        with self._lock:
            self.requests += requests
            self.retries += retries
            self.server_s += server_s

    def fail(self, span: range, reason: str) -> None:
        with self._lock:
            for at in span:
                self.failed[at] = reason

    def result(self) -> Embedded:
        done = [row for row in self.rows if row is not None]
        dim = len(done[0]) if done else 0
        vectors = np.zeros((len(self.texts), dim), dtype=np.float32)
        for at, row in enumerate(self.rows):
            if row is not None:
                vectors[at] = row
        return Embedded(
            _normalise(vectors), self.failed, self.down, self.requests, self.retries, self.server_s
        )


class RemoteEmbedder(Embedder):
    """A model behind a server, called as the module says."""

    label = "embedding server"

    def __init__(
        self,
        provider: str,
        model: str,
        base_url: str,
        limits: ServerLimits,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(provider, model)
        self.base_url = base_url.rstrip("/")
        self.limits = limits
        self.batch_size = limits.inputs
        self.where = f"{self.label} at {self.base_url}"
        self.inflight = InFlight(limits.concurrency, provider, model)
        pool = httpx.Limits(max_connections=limits.concurrency + 8)
        self._http = httpx.Client(
            base_url=self.base_url, headers=headers or {}, timeout=limits.timeout_s, limits=pool
        )
        self._pool = ThreadPoolExecutor(limits.concurrency, thread_name_prefix="rag-embed-call")
        self._rules = indexing_rules(limits.retry_wait_s)

    def placement(self) -> Placement:
        return Placement(self.base_url, None)

    @property
    def calls_at_once(self) -> int:
        """Two: a call's first requests go out beside the last of the one before (its
        `concurrency` bounds the requests of both together)."""
        return 2

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        call = self._embed(texts, QUERY_RULES if query else self._rules, query)
        if call.down or call.failed:
            reason = call.down or next(iter(call.failed.values()))
            reason = reason.removeprefix(f"{self.where}: ")
            raise EmbedderUnavailable(self.where, reason) from call.cause
        return call.result().vectors

    def embed_each(self, texts: Sequence[str]) -> Embedded:
        return self._embed(texts, self._rules, False).result()

    @abstractmethod
    def _request(self, texts: list[str]) -> tuple[str, dict[str, Any]]:
        """The path and JSON body of a request embedding `texts`."""

    @abstractmethod
    def _rows(self, reply: Any, count: int) -> list[Any]:
        """The vectors of a 200 reply, in input order (KeyError, TypeError, ValueError when the
        reply is not what the API answers)."""

    def _embed(self, texts: Sequence[str], rules: RetryRules, query: bool) -> _Call:
        fit, cut = fitted(texts, self.limits)
        if cut:
            log.warning("%s: %d input(s) cut to %s tokens", self.id, cut, self.limits.input_tokens)
        call = _Call(fit, rules, query)
        spans = requests(fit, self.limits)
        if len(spans) <= 1 or query:
            for span in spans:
                self._send(call, span)
        else:
            list(self._pool.map(lambda span: self._send(call, span), spans))
        return call

    def _send(self, call: _Call, span: range) -> None:
        if call.down is not None:
            call.fail(span, call.down)
            return
        try:
            rows = self._answer(call, call.texts[span.start : span.stop])
        except Refused as exc:
            if len(span) == 1 or call.query:  # questions: each is asked alone again upstream
                call.fail(span, f"{self.where} refused it: {exc}")
                return
            middle = (span.start + span.stop) // 2  # find the input it refuses
            self._send(call, range(span.start, middle))
            self._send(call, range(middle, span.stop))
            return
        except GaveUp as exc:
            reason = f"{self.where}: {exc}"
            call.stop(reason, exc.__cause__)
            call.fail(span, reason)
            return
        for at, row in zip(span, rows, strict=True):
            call.rows[at] = np.asarray(row, dtype=np.float32)

    def _answer(self, call: _Call, texts: list[str]) -> list[Any]:
        """The vectors of `texts` from one request, retried as the call's rules allow."""
        rules, started = call.rules, time.monotonic()
        deadline = started + rules.budget_s
        path, body = self._request(texts)
        attempt, reason, error = 0, "no request slot came free", None
        refusals = 0  # connections refused: nobody listens (a restart, at most CONNECT_RETRIES)
        while True:
            asked = None
            sent = time.monotonic()
            timeout = self.limits.timeout_s
            try:
                # a slot is waited for until the budget is spent, and one attempt always made
                with self.inflight.slot(max(deadline, sent + timeout), query=call.query) as epoch:
                    call.tally(requests=1)
                    response = self._http.post(path, json=body)
                    if response.status_code in SHEDDING_STATUS:
                        asked = asked_pause_s(response)
                        self.inflight.shed(epoch, asked)
            except Deadline:
                raise GaveUp(self._gave_up(reason, attempt, started)) from error
            except httpx.TimeoutException as exc:
                reason, kind, error = f"no answer within {timeout:.3g} s", "timeout", exc
            except httpx.ConnectError as exc:
                reason, kind, error = f"connection refused ({exc})", "connect", exc
                refusals += 1
            except httpx.TransportError as exc:
                reason, kind, error = f"connection cut ({type(exc).__name__}: {exc})", "cut", exc
            else:
                call.tally(server_s=time.monotonic() - sent)
                status = response.status_code
                if status < 300:
                    return self._usable(response, len(texts))
                detail = _detail(response)
                if status in REFUSED_STATUS:
                    if self._retry_as_floats(detail):
                        body = self._request(texts)[1]
                        continue
                    raise Refused(f"HTTP {status}: {detail}")
                if status not in RETRIED_STATUS:
                    raise GaveUp(f"HTTP {status}: {detail}")
                reason, kind = f"HTTP {status}: {detail}", str(status)
            attempt += 1
            pause = pause_s(attempt, asked)
            if (
                (rules.retries is not None and attempt > rules.retries)
                or (rules.max_pause_s is not None and pause > rules.max_pause_s)
                or time.monotonic() + pause >= deadline
                or refusals > CONNECT_RETRIES
            ):
                raise GaveUp(self._gave_up(reason, attempt, started)) from error
            EMBEDDING_RETRIES.labels(self.provider, kind).inc()
            call.tally(retries=1)
            if call.stopped.wait(pause):
                raise GaveUp(call.down or reason) from error

    def _usable(self, response: httpx.Response, count: int) -> list[Any]:
        try:
            rows = self._rows(response.json(), count)
        except (KeyError, TypeError, ValueError) as exc:
            raise GaveUp(f"answered in a shape that is not its API's ({exc})") from exc
        if len(rows) != count:
            raise GaveUp(f"answered {len(rows)} vectors for {count} inputs")
        self.inflight.served()
        return rows

    def _retry_as_floats(self, detail: str) -> bool:
        """Whether the server refused an encoding it does not speak (then the request is
        remade in the one every server speaks)."""
        return False

    @staticmethod
    def _gave_up(reason: str, attempts: int, started: float) -> str:
        took = time.monotonic() - started
        return f"{reason}; gave up after {attempts} attempt(s) in {took:.1f} s"


class OllamaEmbedder(RemoteEmbedder):
    """Ollama's /api/embed: it cuts an input to the model's context itself (`truncate`)."""

    label = "Ollama"

    def __init__(self, model: str, base_url: str, limits: ServerLimits) -> None:
        super().__init__("ollama", model, base_url, limits)

    def _request(self, texts: list[str]) -> tuple[str, dict[str, Any]]:
        return "/api/embed", {"model": self.model, "input": texts, "truncate": True}

    def _rows(self, reply: Any, count: int) -> list[Any]:
        return list(reply["embeddings"])


class OpenAIEmbedder(RemoteEmbedder):
    """An OpenAI-compatible /embeddings: vectors asked as base64 (a quarter of the JSON of
    floats, decoded without parsing), floats where a server answers or accepts only those."""

    label = "embeddings API"

    def __init__(
        self, model: str, base_url: str, api_key: str | None, limits: ServerLimits
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        super().__init__("openai", model, base_url, limits, headers)
        self._encoding = "base64"

    def _request(self, texts: list[str]) -> tuple[str, dict[str, Any]]:
        body = {"model": self.model, "input": texts, "encoding_format": self._encoding}
        return "/embeddings", body

    def _rows(self, reply: Any, count: int) -> list[Any]:
        data = sorted(reply["data"], key=lambda item: item["index"])
        return [_vector(item["embedding"]) for item in data]

    def _retry_as_floats(self, detail: str) -> bool:
        if self._encoding == "base64" and "encoding_format" in detail:
            self._encoding = "float"
            return True
        return False


def _vector(value: Any) -> Any:
    if isinstance(value, str):
        return np.frombuffer(base64.b64decode(value), dtype=np.float32)
    return value


def _detail(response: httpx.Response) -> str:
    """A server's error body, short: OpenAI's and Ollama's `error` message, else the text."""
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        error = None
    if isinstance(error, dict):
        error = error.get("message")
    text = error if isinstance(error, str) else response.text
    return " ".join(text.split())[:DETAIL_CHARS] or response.reason_phrase
