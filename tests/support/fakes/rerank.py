"""FakeReranker: a rerank server (llama.cpp, TEI, Infinity, vLLM; Jina's and Cohere's shape) over
real HTTP: `POST /rerank` and `/v1/rerank` with {model, query, documents, top_n} answered with
{"results": [{"index", "relevance_score"}]}, best first, at most top_n of them."""

from __future__ import annotations

import threading
from typing import Any

from tests.support.fakes.http import FakeServer, Reject, Request, Response


def relevance(query: str, document: str) -> float:
    """The score this server gives: query words in the document, the shorter document first on a
    tie (an order that differs from retrieval's, so a test sees whose order it got)."""
    said = {word.strip(".,;") for word in document.lower().split()}
    found = sum(word in said for word in query.lower().split())
    return round(found + 1 / len(document), 6)


class FakeReranker(FakeServer):
    def __init__(self, model: str = "bge-reranker-v2-m3", api_key: str | None = None) -> None:
        super().__init__()
        self.model = model
        self.api_key = api_key
        self.hang = threading.Event()  # set: answer only after the server stops
        self.results: list[dict[str, Any]] | None = None  # answered as is, when set
        self.routes = {("POST", "/rerank"): self._rerank, ("POST", "/v1/rerank"): self._rerank}

    def guard(self, request: Request) -> None:
        if self.api_key and request.headers.get("authorization") != f"Bearer {self.api_key}":
            raise Reject(self.error(401, "invalid api key"))

    def _rerank(self, request: Request) -> Response:
        body = request.body if isinstance(request.body, dict) else {}
        if body.get("model") != self.model:
            return self.error(404, f"model {body.get('model')!r} not found")
        query, documents = body.get("query"), body.get("documents")
        if not isinstance(query, str) or not isinstance(documents, list):
            return self.error(400, "query (a string) and documents (a list) are required")
        if self.hang.is_set():
            self._stopped.wait()
        if self.results is not None:
            return 200, {"results": self.results}
        scored = [
            {"index": i, "relevance_score": relevance(query, d)} for i, d in enumerate(documents)
        ]
        scored.sort(key=lambda r: -r["relevance_score"])
        return 200, {"model": self.model, "results": scored[: body.get("top_n") or len(scored)]}
