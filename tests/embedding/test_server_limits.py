"""What one request to an embedding server may carry: OpenAI's published limits for its own API
where the block names none, the block's own elsewhere; an over-long input cut on a character
boundary; requests cut by count and by estimated tokens, in order."""

from __future__ import annotations

from rag_api.config import EmbedderConfig
from rag_api.embedding.server_limits import ServerLimits, estimated_tokens, fitted, requests


def _limits(**block) -> ServerLimits:
    return ServerLimits.of(EmbedderConfig(**{"model": "m", "dim": 8, **block}))


def test_openais_api_gets_its_published_limits_other_servers_only_what_is_set() -> None:
    api = _limits(provider="openai", base_url="https://api.openai.com/v1", batch_size=4096)
    assert (api.inputs, api.request_tokens, api.input_tokens) == (2048, 300_000, 8191)
    own = _limits(provider="openai", base_url="https://api.openai.com/v1", max_input_tokens=512)
    assert (own.inputs, own.request_tokens, own.input_tokens) == (32, 300_000, 512)
    served = _limits(provider="openai", base_url="http://tei.internal:8080/v1", batch_size=4096)
    assert (served.inputs, served.request_tokens, served.input_tokens) == (4096, None, None)
    ollama = _limits(provider="ollama", base_url="https://api.openai.com", concurrency=2)
    assert (ollama.input_tokens, ollama.concurrency) == (None, 2)
    timed = _limits(provider="ollama", timeout_s=5, retry_wait_s=9)
    assert (timed.timeout_s, timed.retry_wait_s) == (5, 9)


def test_an_input_over_the_limit_is_cut_on_a_character_boundary_and_counted() -> None:
    limits = _limits(provider="openai", base_url="http://x/v1", max_input_tokens=2)  # 6 bytes
    texts, cut = fitted(["short", "ñandú al sol", "exactly", "sixsix"], limits)
    assert texts == ["short", "ñand", "exactl", "sixsix"] and cut == 2
    assert all(len(t.encode()) <= 6 for t in texts)
    assert fitted(["ñandú al sol"], _limits(provider="ollama")) == (["ñandú al sol"], 0)


def test_requests_are_cut_by_count_and_by_estimated_tokens_in_order() -> None:
    assert estimated_tokens("abcdefg") == 3  # bytes / 3, up
    by_count = _limits(provider="ollama", batch_size=2)
    assert requests(["a"] * 5, by_count) == [range(0, 2), range(2, 4), range(4, 5)]
    by_tokens = _limits(provider="openai", base_url="http://x/v1", max_request_tokens=4)
    texts = ["abcdef", "abc", "abcdefghijklmnop", "a", "a"]  # 2, 1, 6, 1, 1 tokens
    assert requests(texts, by_tokens) == [range(0, 2), range(2, 3), range(3, 5)]
    assert requests([], by_tokens) == []
