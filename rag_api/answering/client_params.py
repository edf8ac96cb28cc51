"""What a collection's llm block lets a client set of the generation: the token limit capped at
its `max_tokens`, each other parameter allowed, fixed or refused (`llm.client_params`)."""

from __future__ import annotations

from dataclasses import replace

from rag_api.config import LLMConfig
from rag_api.errors import InvalidRequest
from rag_api.llm.generators import Options

# each parameter's empty value in Options: what a fixed one becomes (the LLM's own default)
_UNSET = {
    "top_p": None,
    "seed": None,
    "stop": (),
    "presence_penalty": None,
    "frequency_penalty": None,
}


def refuse_params(llm: LLMConfig, temperature: float | None, options: Options) -> None:
    """InvalidRequest naming the first parameter the client sent that the llm block refuses."""
    sent = {"temperature": temperature, **{name: getattr(options, name) for name in _UNSET}}
    rules = llm.client_params
    for name, value in sent.items():
        if value not in (None, ()) and getattr(rules, name) == "refuse":
            raise InvalidRequest(
                f"{name}: this collection's LLM does not take it from clients (llm.client_params)",
                param=name,
            )


def limited(
    llm: LLMConfig, temperature: float | None, max_tokens: int | None, options: Options
) -> tuple[float, int | None, Options]:
    """The temperature, token limit and options the LLM gets: the client's, with a limit lowered
    to the llm block's `max_tokens` (never raised) and the fixed parameters unset."""
    rules = llm.client_params
    if temperature is None or rules.temperature != "allow":
        temperature = llm.temperature
    if llm.max_tokens is not None:
        max_tokens = llm.max_tokens if max_tokens is None else min(max_tokens, llm.max_tokens)
    fixed = {name: empty for name, empty in _UNSET.items() if getattr(rules, name) != "allow"}
    return temperature, max_tokens, replace(options, **fixed) if fixed else options
