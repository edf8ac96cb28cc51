"""FakeOpenAI: an OpenAI-compatible upstream (vLLM, LM Studio, llama.cpp) over real HTTP."""

from __future__ import annotations

import base64
import json
import struct
import time
import uuid
from collections.abc import Generator, Iterable, Mapping

from tests.support.fakes.http import (
    FakeServer,
    Reject,
    Request,
    Response,
    Stream,
    message_text,
    words,
)
from tests.support.fakes.ollama import embed


def _usage(prompt: int, completion: int) -> dict:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _choice(delta: dict, finish_reason: str | None = None) -> list[dict]:
    return [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]


def _event(obj: dict) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def _encode(vector: list[float], encoding_format: str) -> list[float] | str:
    if encoding_format == "float":
        return vector
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()


class FakeOpenAI(FakeServer):
    """OpenAI-compatible API under /v1; `required_api_key` makes a Bearer key mandatory."""

    def __init__(
        self,
        chat_models: Iterable[str] = ("gpt-4o-mini",),
        embed_models: Mapping[str, int] | None = None,
        required_api_key: str | None = None,
    ) -> None:
        super().__init__()
        self.chat_models = list(chat_models)
        self.embed_models = dict(embed_models or {"text-embedding-3-small": 1536})
        self.required_api_key = required_api_key
        self.max_input_words: int | None = None  # a longer input is refused, as past a context
        self.embed_delay = 0.0  # seconds before an embeddings answer
        self.routes = {
            ("GET", "/v1/models"): self._models,
            ("POST", "/v1/chat/completions"): self._chat,
            ("POST", "/v1/embeddings"): self._embeddings,
        }

    def error(
        self, status: int, message: str, code: str | None = None, param: str | None = None
    ) -> Response:
        """OpenAI's error shape: {"error": {"message", "type", "param", "code"}}."""
        kind = "server_error" if status >= 500 else "invalid_request_error"
        return status, {"error": {"message": message, "type": kind, "param": param, "code": code}}

    def guard(self, request: Request) -> None:
        """Refuse with 401 unless the Bearer key matches `required_api_key` (when set)."""
        expected = f"Bearer {self.required_api_key}"
        if self.required_api_key is not None and request.headers.get("authorization") != expected:
            raise Reject(self.error(401, "Incorrect API key provided.", code="invalid_api_key"))

    def _require_model(self, name: str, known: Iterable[str]) -> None:
        if name not in known:
            message = f"The model `{name}` does not exist or you do not have access to it."
            raise Reject(self.error(404, message, code="model_not_found", param="model"))

    def _models(self, request: Request) -> Response:
        names = self.chat_models + list(self.embed_models)
        data = [
            {"id": n, "object": "model", "created": 1_700_000_000, "owned_by": "fake"}
            for n in names
        ]
        return 200, {"object": "list", "data": data}

    def _chat(self, request: Request) -> Response:
        body = request.body
        name = body.get("model", "")
        self._require_model(name, self.chat_models)
        text = self.reply_text(body)
        prompt = sum(words(message_text(m.get("content"))) for m in body.get("messages") or [])
        head = {"id": f"chatcmpl-{uuid.uuid4().hex}", "created": int(time.time()), "model": name}
        calls = self.calls_for(body)
        if calls:
            return self._tool_calls(head, calls, prompt, body)
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            chunks = self._events(head, text, prompt, include_usage)
            return 200, Stream("text/event-stream", chunks)
        text = "".join(self.pieces(text))
        choice = {"index": 0, "message": {"role": "assistant", "content": text}}
        choice |= {"logprobs": None, "finish_reason": "stop"}
        return 200, {
            **head,
            "object": "chat.completion",
            "choices": [choice],
            "usage": _usage(prompt, words(text)),
        }

    def _events(self, head: dict, text: str, prompt: int, include_usage: bool) -> Generator[bytes]:
        head = {**head, "object": "chat.completion.chunk"}
        extra = {"usage": None} if include_usage else {}
        yield _event({**head, "choices": _choice({"role": "assistant", "content": ""}), **extra})
        for piece in self.pieces(text):
            yield _event({**head, "choices": _choice({"content": piece}), **extra})
        yield _event({**head, "choices": _choice({}, "stop"), **extra})
        if include_usage:
            yield _event({**head, "choices": [], "usage": _usage(prompt, words(text))})
        yield b"data: [DONE]\n\n"

    def _tool_calls(self, head: dict, calls: list[dict], prompt: int, body: dict) -> Response:
        """Answer with tool calls, as OpenAI does: whole in a message, or streamed as
        `delta.tool_calls` pieces (id, type and name first, then the arguments in pieces)."""
        whole = [
            {
                "id": f"call_{uuid.uuid4().hex[:24]}",
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
            }
            for c in calls
        ]
        completion = sum(words(c["function"]["arguments"]) for c in whole)
        if not body.get("stream"):
            message = {"role": "assistant", "content": None, "tool_calls": whole}
            choice = {"index": 0, "message": message, "logprobs": None}
            return 200, {
                **head,
                "object": "chat.completion",
                "choices": [{**choice, "finish_reason": "tool_calls"}],
                "usage": _usage(prompt, completion),
            }
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        head = {**head, "object": "chat.completion.chunk"}
        extra = {"usage": None} if include_usage else {}

        def events() -> Generator[bytes]:
            yield _event(
                {**head, "choices": _choice({"role": "assistant", "content": None}), **extra}
            )
            for index, call in enumerate(whole):
                first = {**call, "index": index, "function": {**call["function"], "arguments": ""}}
                yield _event({**head, "choices": _choice({"tool_calls": [first]}), **extra})
                arguments = call["function"]["arguments"]
                for at in range(0, len(arguments), 5):
                    piece = {"index": index, "function": {"arguments": arguments[at : at + 5]}}
                    yield _event({**head, "choices": _choice({"tool_calls": [piece]}), **extra})
            yield _event({**head, "choices": _choice({}, "tool_calls"), **extra})
            if include_usage:
                yield _event({**head, "choices": [], "usage": _usage(prompt, completion)})
            yield b"data: [DONE]\n\n"

        return 200, Stream("text/event-stream", events())

    def _embeddings(self, request: Request) -> Response:
        body = request.body
        name, texts = body.get("model", ""), body.get("input")
        self._require_model(name, self.embed_models)
        texts = [texts] if isinstance(texts, str) else texts
        if not texts or not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise Reject(
                self.error(400, "input must be a string or a list of strings", param="input")
            )
        too_long = [t for t in texts if self.max_input_words and words(t) > self.max_input_words]
        if too_long:
            message = (
                f"This model's maximum context length is {self.max_input_words} tokens, however "
                f"you requested {words(too_long[0])} tokens. Please reduce your prompt."
            )
            raise Reject(self.error(400, message, param="input"))
        time.sleep(self.embed_delay)
        encoding_format = body.get("encoding_format") or "float"
        if encoding_format not in ("float", "base64"):
            raise Reject(
                self.error(400, "encoding_format must be float or base64", param="encoding_format")
            )
        try:
            vectors = [embed(t, self.embed_models[name], body.get("dimensions")) for t in texts]
        except ValueError as exc:
            raise Reject(self.error(400, str(exc), param="dimensions")) from None
        data = [
            {"object": "embedding", "index": i, "embedding": _encode(v, encoding_format)}
            for i, v in enumerate(vectors)
        ]
        tokens = sum(words(t) for t in texts)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return 200, {"object": "list", "data": data, "model": name, "usage": usage}
