"""A rerank server: `POST {base_url}/rerank` with `{model, query, documents, top_n}`, answered with
`{"results": [{"index", "relevance_score"}]}` — the API of llama.cpp's server, Hugging Face TEI,
Infinity and vLLM, and the shape Jina's and Cohere's use. One circuit breaker per server and hub
(rag_api.llm.rerankers), as for the LLM upstreams: a dead server costs one bounded wait, then
searches skip it for the cool-down.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import httpx

from rag_api.config import RerankTimeouts
from rag_api.errors import redact
from rag_api.llm.breaker import CircuitBreaker


class RerankUnavailable(Exception):
    """The server could not rerank (down, slow, an error, or an answer that is not one)."""


class RerankServer:
    """One rerank server, with its circuit breaker (`failures` in a row open it for `cooldown` s)."""

    def __init__(
        self,
        base_url: str,
        api_key_env: str | None,
        timeouts: RerankTimeouts,
        failures: int,
        cooldown: float,
    ) -> None:
        self.url = base_url.rstrip("/") + "/rerank"
        self.breaker = CircuitBreaker(f"rerank server at {redact(base_url)}", failures, cooldown)
        key = os.environ.get(api_key_env, "") if api_key_env else ""
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(
            headers=headers, timeout=httpx.Timeout(timeouts.total, connect=timeouts.connect)
        )

    def scores(self, model: str, query: str, documents: Sequence[str]) -> dict[int, float]:
        if not self.breaker.allow():
            raise RerankUnavailable(
                f"{self.breaker.name} is not called for {self.breaker.retry_in():.0f} s "
                "after repeated failures"
            )
        body = {
            "model": model,
            "query": query,
            "documents": list(documents),
            "top_n": len(documents),
        }
        try:
            response = self._client.post(self.url, json=body)
            response.raise_for_status()
            found = _results(response.json(), len(documents))
        except (httpx.HTTPError, ValueError) as exc:
            self.breaker.failed()
            raise RerankUnavailable(f"{self.breaker.name} failed: {_why(exc)}") from exc
        self.breaker.succeeded()
        return found


def _results(answer: Any, count: int) -> dict[int, float]:
    """The scores of a rerank answer, refused (ValueError) unless each is a known index once."""
    results = answer.get("results") if isinstance(answer, dict) else None
    if not isinstance(results, list):
        raise ValueError("the answer has no 'results' list")
    found: dict[int, float] = {}
    for item in results:
        index = item.get("index") if isinstance(item, dict) else None
        score = item.get("relevance_score") if isinstance(item, dict) else None
        if type(index) is not int or not 0 <= index < count or index in found:
            raise ValueError(f"result index {index!r} is not one of the {count} documents once")
        if (
            isinstance(score, bool)
            or not isinstance(score, int | float)
            or not math.isfinite(score)
        ):
            raise ValueError(f"result {index} has no numeric relevance_score")
        found[index] = float(score)
    return found


def _why(exc: Exception) -> str:
    if isinstance(exc, httpx.HTTPStatusError):
        return f"HTTP {exc.response.status_code}"
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    return str(exc) or type(exc).__name__
