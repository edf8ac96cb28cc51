"""/v1/embeddings: a collection's own embedder for OpenAI clients (AnythingLLM, Open WebUI, the
SDKs), so their vectors are the ones the hub stores. `model` is a collection (the document side,
its document prefix) or `<collection>:query` (the query side)."""

from __future__ import annotations

import base64
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, field_validator

from rag_api.catalog import Catalog
from rag_api.errors import InvalidRequest, PayloadTooLarge
from rag_api.openai_compat.model_names import find_model
from rag_api.openai_compat.models import Lenient, ModelName

QUERY = ":query"
MAX_INPUTS = 2048  # OpenAI's own limit on one request's inputs
MAX_CHARS = 32_000  # one input; a chunk is far shorter


class EmbeddingsRequest(Lenient):
    model: ModelName
    input: str | Annotated[list[Any], Field(min_length=1)]
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: Annotated[int, Field(gt=0)] | None = None

    @field_validator("input")
    @classmethod
    def _texts(cls, value: Any) -> Any:
        items = [value] if isinstance(value, str) else value
        if not all(isinstance(item, str) for item in items):
            raise ValueError("must be a string or a list of strings (token arrays are not taken)")
        return value


def create_embeddings(hub: Catalog, body: EmbeddingsRequest) -> dict[str, Any]:
    """OpenAI's embedding list for `body`, by the collection's embedder and prefixes."""
    query = body.model.endswith(QUERY)
    name = find_model(hub, body.model.removesuffix(QUERY) if query else body.model)
    collection = hub.collection(name)
    cfg = collection.cfg.embedder
    if body.dimensions is not None and body.dimensions != cfg.dim:
        raise InvalidRequest(
            f"dimensions: '{name}' embeds in {cfg.dim} dimensions, not {body.dimensions}",
            param="dimensions",
        )
    texts = [body.input] if isinstance(body.input, str) else list(body.input)
    if len(texts) > MAX_INPUTS:
        raise PayloadTooLarge(f"input: at most {MAX_INPUTS} texts a request", param="input")
    if any(len(text) > MAX_CHARS for text in texts):
        raise PayloadTooLarge(f"input: at most {MAX_CHARS} characters a text", param="input")
    if query:
        vectors = np.stack([collection.embed_query(text) for text in texts])
    else:
        vectors = collection.embed_documents(texts)
    data = [
        {"object": "embedding", "index": i, "embedding": _encoded(row, body.encoding_format)}
        for i, row in enumerate(vectors)
    ]
    counted = hub.embedders.get(cfg).count_tokens(texts, query=query)
    # a model behind a server (Ollama, OpenAI-compatible) has no tokenizer here: its words
    tokens = sum(len(text.split()) for text in texts) if counted is None else counted
    return {
        "object": "list",
        "data": data,
        "model": body.model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def _encoded(row: np.ndarray, encoding: str) -> list[float] | str:
    if encoding == "base64":  # little-endian float32, what the official SDK decodes
        return base64.b64encode(np.asarray(row, dtype="<f4").tobytes()).decode()
    return [float(x) for x in row]
