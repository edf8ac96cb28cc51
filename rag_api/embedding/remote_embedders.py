"""The embedding models behind a server: Ollama's /api/embed and any OpenAI-compatible
/v1/embeddings endpoint, each call a batch of inputs (the hub's query batches included)."""

from __future__ import annotations

from collections.abc import Sequence

import httpx
import numpy as np

from rag_api.embedding.devices import Placement
from rag_api.embedding.embedders import Embedder, _normalise
from rag_api.errors import EmbedderUnavailable


class OllamaEmbedder(Embedder):
    """Ollama's /api/embed, batched, through the official client."""

    def __init__(
        self, model: str, base_url: str, batch_size: int = 32, timeout: float = 60
    ) -> None:
        super().__init__("ollama", model)
        import ollama

        self.base_url = base_url
        self.batch_size = batch_size
        self._client = ollama.Client(host=base_url, timeout=timeout)

    def placement(self) -> Placement:
        return Placement(self.base_url, None)

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            try:
                rows.extend(self._client.embed(model=self.model, input=batch).embeddings)
            except Exception as exc:
                raise EmbedderUnavailable(f"Ollama at {self.base_url}", str(exc)) from exc
        return _normalise(np.asarray(rows, dtype=np.float32))


class OpenAIEmbedder(Embedder):
    """Any OpenAI-compatible /v1/embeddings endpoint (vLLM, LM Studio, llama.cpp, OpenAI)."""

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str | None,
        batch_size: int = 32,
        timeout: float = 60,
    ) -> None:
        super().__init__("openai", model)
        self.base_url = base_url.rstrip("/")
        self.batch_size = batch_size
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout)

    def placement(self) -> Placement:
        return Placement(self.base_url, None)

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            body = {
                "model": self.model,
                "input": list(texts[start : start + self.batch_size]),
                "encoding_format": "float",
            }
            try:
                response = self._http.post("/embeddings", json=body)
                response.raise_for_status()
                data = sorted(response.json()["data"], key=lambda item: item["index"])
            except (httpx.HTTPError, KeyError, ValueError) as exc:
                detail = getattr(getattr(exc, "response", None), "text", "") or str(exc)
                raise EmbedderUnavailable(f"embeddings API at {self.base_url}", detail) from exc
            rows.extend(item["embedding"] for item in data)
        return _normalise(np.asarray(rows, dtype=np.float32))
