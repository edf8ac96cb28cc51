"""FakeOllama: Ollama's REST API (version, tags, embed, legacy embeddings, chat) over real HTTP."""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import time
from collections import Counter
from collections.abc import Container, Generator, Iterable, Mapping
from datetime import UTC, datetime

from tests.support.fakes.http import (
    FakeServer,
    Reject,
    Request,
    Response,
    Stream,
    message_text,
    words,
)

VERSION = "0.6.3"
LOAD_NS = 1_000_000
_WORD = re.compile(r"\w+")
_STOPWORDS = frozenset(
    "a an and are as at be by do does for from how i in is it my of on or the to what with".split()
)


@functools.lru_cache(maxsize=1 << 16)
def _slots(feature: str, dim: int) -> tuple[tuple[int, int], ...]:
    digest = hashlib.blake2b(feature.encode(), digest_size=16).digest()
    values = [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]
    return tuple(((v >> 1) % dim, 1 if v & 1 else -1) for v in values)


def embed(text: str, dim: int, dimensions: int | None = None) -> list[float]:
    """Deterministic unit vector: hashed words (3 signed slots, sublinear tf, stopwords damped)."""
    if dimensions is not None and not 0 < dimensions <= dim:
        raise ValueError(f"dimensions must be between 1 and {dim}")
    vec = [0.0] * dim
    for word, count in Counter(_WORD.findall(text.lower())).items():
        weight = (1 + math.log(count)) * (0.1 if word in _STOPWORDS else 1.0)
        for index, sign in _slots("w:" + word, dim)[:3]:
            vec[index] += weight * sign
        padded = f"#{word}#"  # character trigrams: partial credit for related word forms
        for i in range(len(padded) - 2):
            index, sign = _slots("t:" + padded[i : i + 3], dim)[0]
            vec[index] += 0.3 * weight * sign
    vec = vec[:dimensions] if dimensions else vec
    norm = math.sqrt(sum(x * x for x in vec))
    return [x / norm for x in vec] if norm else [1.0] + [0.0] * (len(vec) - 1)


def _tagged(name: str) -> str:
    return name if ":" in name else name + ":latest"


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _line(obj: dict) -> bytes:
    return json.dumps(obj).encode() + b"\n"


def _message(model: str, content: str, done: bool) -> dict:
    message = {"role": "assistant", "content": content}
    return {"model": model, "created_at": _now(), "message": message, "done": done}


def _stats(prompt_count: int, text: str, started: int) -> dict:
    took = time.monotonic_ns() - started
    return {
        "done_reason": "stop",
        "total_duration": LOAD_NS + took,
        "load_duration": LOAD_NS,
        "prompt_eval_count": prompt_count,
        "prompt_eval_duration": LOAD_NS,
        "eval_count": words(text),
        "eval_duration": took,
    }


def _tag_entry(name: str, family: str) -> dict:
    return {
        "name": name,
        "model": name,
        "modified_at": "2025-01-01T00:00:00Z",
        "size": 274_302_450,
        "digest": hashlib.sha256(name.encode()).hexdigest(),
        "details": {
            "parent_model": "",
            "format": "gguf",
            "family": family,
            "families": [family],
            "parameter_size": "1B",
            "quantization_level": "F16",
        },
    }


class FakeOllama(FakeServer):
    """Ollama on 127.0.0.1; model names without a tag are stored and matched as 'name:latest'."""

    def __init__(
        self,
        embed_models: Mapping[str, int] | None = None,
        chat_models: Iterable[str] = ("llama3.2",),
    ) -> None:
        super().__init__()
        models = embed_models or {"nomic-embed-text": 768, "mxbai-embed-large": 1024}
        self.embed_models = {_tagged(name): dim for name, dim in models.items()}
        self.chat_models = [_tagged(name) for name in chat_models]
        self.routes = {
            ("GET", "/"): lambda request: (200, "Ollama is running"),
            ("GET", "/api/version"): lambda request: (200, {"version": VERSION}),
            ("GET", "/api/tags"): self._tags,
            ("POST", "/api/embed"): self._embed,
            ("POST", "/api/embeddings"): self._legacy_embeddings,
            ("POST", "/api/chat"): self._chat,
        }

    def _require_model(
        self, name: str, wanted: Container[str], other: Container[str], ability: str
    ) -> None:
        if not name:
            raise Reject(self.error(400, "model is required"))
        if _tagged(name) in other:
            raise Reject(self.error(400, f'"{name}" does not support {ability}'))
        if _tagged(name) not in wanted:
            raise Reject(self.error(404, f'model "{name}" not found, try pulling it first'))

    def _vectors(self, name: str, texts: object, dimensions: int | None) -> list[list[float]]:
        self._require_model(name, self.embed_models, self.chat_models, "embeddings")
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise Reject(self.error(400, "input must be a string or a list of strings"))
        try:
            return [embed(t, self.embed_models[_tagged(name)], dimensions) for t in texts]
        except ValueError as exc:
            raise Reject(self.error(400, str(exc))) from None

    def _tags(self, request: Request) -> Response:
        models = [_tag_entry(name, "bert") for name in self.embed_models]
        return 200, {"models": models + [_tag_entry(name, "llama") for name in self.chat_models]}

    def _embed(self, request: Request) -> Response:
        body = request.body
        texts = body.get("input", [])
        texts = [texts] if isinstance(texts, str) else texts
        vectors = self._vectors(body.get("model", ""), texts, body.get("dimensions"))
        return 200, {
            "model": body["model"],
            "embeddings": vectors,
            "total_duration": 2 * LOAD_NS,
            "load_duration": LOAD_NS,
            "prompt_eval_count": sum(words(t) for t in texts),
        }

    def _legacy_embeddings(self, request: Request) -> Response:
        body = request.body
        vectors = self._vectors(body.get("model", ""), [body.get("prompt", "")], None)
        return 200, {"embedding": vectors[0]}

    def _chat(self, request: Request) -> Response:
        body, started = request.body, time.monotonic_ns()
        name = body.get("model", "")
        self._require_model(name, self.chat_models, self.embed_models, "chat")
        text = self.reply_text(body)
        prompt = sum(words(message_text(m.get("content"))) for m in body.get("messages") or [])
        calls = self.calls_for(body)
        if calls:  # Ollama sends each call whole, arguments as an object, without an id
            message = _message(name, "", False)
            message["message"]["tool_calls"] = [
                {"function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls
            ]
            done = {**_message(name, "", True), **_stats(prompt, "", started)}
            if body.get("stream", True):
                lines = iter([_line(message), _line(done)])
                return 200, Stream("application/x-ndjson", (line for line in lines))
            return 200, {**done, "message": message["message"]}
        if body.get("stream", True):
            return 200, Stream("application/x-ndjson", self._lines(name, text, prompt, started))
        text = "".join(self.pieces(text))
        return 200, {**_message(name, text, True), **_stats(prompt, text, started)}

    def _lines(self, name: str, text: str, prompt: int, started: int) -> Generator[bytes]:
        for piece in self.pieces(text):
            yield _line(_message(name, piece, False))
        yield _line({**_message(name, "", True), **_stats(prompt, text, started)})
