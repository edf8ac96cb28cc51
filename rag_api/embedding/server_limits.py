"""What one request to an embedding server may carry, and how the texts of a batch are cut into
requests: at most `batch_size` inputs and an estimated token budget each, an input over the
model's own limit cut to it. For OpenAI's own API its published limits apply when the block
names none (2,048 inputs and 300,000 tokens a request, 8,191 tokens an input).

Tokens are estimated, not counted (the server's tokenizer is not here): a token for every 3
bytes of UTF-8, more than any real tokenizer makes of English (about 4) and about one a
character for Chinese or Japanese, so an estimate within a limit is within it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

OPENAI_API_HOST = "api.openai.com"
OPENAI_MAX_INPUTS = 2048
OPENAI_MAX_REQUEST_TOKENS = 300_000
OPENAI_MAX_INPUT_TOKENS = 8191
BYTES_PER_TOKEN = 3


@dataclass(frozen=True)
class ServerLimits:
    inputs: int  # inputs a request
    request_tokens: int | None  # estimated tokens a request
    input_tokens: int | None  # estimated tokens an input; a longer one is cut
    concurrency: int  # requests in flight at most (rag_api.embedding.inflight)
    timeout_s: float  # one request
    retry_wait_s: float  # one batch, its retries included (rag_api.embedding.retries)

    @classmethod
    def of(cls, cfg: Any) -> ServerLimits:
        """The limits an embedder block sets, OpenAI's own where it names none for its API."""
        openai_api = cfg.provider == "openai" and urlsplit(cfg.base_url or "").hostname == (
            OPENAI_API_HOST
        )
        request_tokens, input_tokens = cfg.max_request_tokens, cfg.max_input_tokens
        inputs = cfg.batch_size
        if openai_api:
            inputs = min(inputs, OPENAI_MAX_INPUTS)
            request_tokens = request_tokens or OPENAI_MAX_REQUEST_TOKENS
            input_tokens = input_tokens or OPENAI_MAX_INPUT_TOKENS
        return cls(
            inputs, request_tokens, input_tokens, cfg.concurrency, cfg.timeout_s, cfg.retry_wait_s
        )


def estimated_tokens(text: str) -> int:
    return math.ceil(len(text.encode()) / BYTES_PER_TOKEN)


def fitted(texts: Sequence[str], limits: ServerLimits) -> tuple[list[str], int]:
    """The texts, each cut to the input limit (on a character boundary), and how many were cut."""
    if limits.input_tokens is None:
        return list(texts), 0
    room = limits.input_tokens * BYTES_PER_TOKEN
    out, cut = [], 0
    for text in texts:
        data = text.encode()
        if len(data) > room:
            text = data[:room].decode(errors="ignore")
            cut += 1
        out.append(text)
    return out, cut


def requests(texts: Sequence[str], limits: ServerLimits) -> list[range]:
    """The texts' positions cut into requests, in order: each at most `inputs` texts and
    `request_tokens` estimated tokens (a text over the budget alone goes alone)."""
    spans: list[range] = []
    start, tokens = 0, 0
    for at, text in enumerate(texts):
        size = estimated_tokens(text) if limits.request_tokens is not None else 0
        full = at - start >= limits.inputs
        over = limits.request_tokens is not None and tokens + size > limits.request_tokens
        if at > start and (full or over):
            spans.append(range(start, at))
            start, tokens = at, 0
        tokens += size
    if start < len(texts):
        spans.append(range(start, len(texts)))
    return spans
