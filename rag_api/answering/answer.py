"""From retrieved passages to an answer: no evidence -> fixed answer; no LLM configured ->
extractive; a configured LLM down -> extractive, said so (preamble and warning)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from rag_api.answering.client_params import limited
from rag_api.errors import LLMUnavailable
from rag_api.llm.extractive import extractive_answer
from rag_api.llm.generators import (
    Generation,
    Generators,
    Messages,
    Options,
    Piece,
    ThinkFilter,
    Usage,
    pieces,
)
from rag_api.llm.prompts import Cited, pack, system_prompt
from rag_api.observability.metrics import LLM_CALLS, LLM_FAILURES, LLM_FALLBACKS, NO_EVIDENCE
from rag_api.points.collection import Collection
from rag_api.search.passage import Passage

log = logging.getLogger("rag_api.answering.answer")


def select_context(passages: Sequence[Passage], budget_chars: int) -> list[Passage]:
    """The passages that fit the context budget, best first; the first always fits (cut if needed)."""
    chosen: list[Passage] = []
    used = 0
    for passage in passages:
        if used + len(passage.text) > budget_chars:
            if not chosen:
                chosen.append(replace(passage, text=passage.text[:budget_chars]))
            break
        chosen.append(passage)
        used += len(passage.text)
    return chosen


@dataclass
class AnswerStream:
    """An answer being produced. Iterate for text pieces (once); afterwards `usage` and
    `finish_reason` are final. `generator` says who answered: an LLM provider, `extractive`,
    or `none` (no evidence: fixed answer, zero tokens, no LLM call)."""

    passages: list[Passage]
    generator: str
    model: str | None
    warning: str | None = None
    usage: Usage = field(default_factory=Usage)
    finish_reason: str = "stop"
    _pieces: Iterator[Piece] | None = None
    _read: bool = False

    def __iter__(self) -> Iterator[Piece]:
        assert self._pieces is not None and not self._read, "an answer can be read once"
        self._read = True
        return self._pieces

    def text(self) -> str:
        return "".join(piece for piece in self if isinstance(piece, str))

    def close(self) -> None:
        """Stop generating (the client went away): closes the upstream request, also mid-read."""
        close = getattr(self._pieces, "close", None)
        if close is not None:
            close()


def answer(
    generators: Generators,
    collection: Collection,
    question: str,
    passages: Sequence[Passage],
    history: Messages | None = None,
    client_system: str | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    language: str | None = None,
    options: Options | None = None,
    after: Messages | None = None,
) -> AnswerStream:
    """Start answering `question` from `passages` with the collection's LLM, in `language`
    (default: the collection's; `auto` decides it when passages of several collections mix);
    `options` go to the LLM as the client sent them (the extractive answer has no use for them);
    `after` (a tool exchange) follows the question."""
    cfg = collection.cfg
    lang = language or cfg.language
    asked = options or Options()
    structured = asked.response_format is not None or asked.offers_tools
    if not passages and not (structured and generators.get(cfg.llm) is not None):
        # a client that asked for JSON or offered tools gets the LLM's answer in that form still
        NO_EVIDENCE.labels(collection.name).inc()
        return AnswerStream([], "none", None, _pieces=iter([pack(lang).no_evidence]))
    context = select_context(passages, cfg.retrieval.context_chars)
    generator = generators.get(cfg.llm)
    if generator is None:
        text = extractive(collection, question, context, lang)
        return AnswerStream(context, "extractive", None, _pieces=pieces(text))
    messages: Messages = [
        {"role": "system", "content": system_prompt(lang, context, client_system)},
        *(history or []),
        {"role": "user", "content": question},
        *(after or []),
    ]

    def fallback(exc: LLMUnavailable) -> AnswerStream:
        LLM_FALLBACKS.labels(collection.name).inc()
        log.warning("%s: %s; answering extractively", collection.name, exc.message)
        text = extractive(collection, question, context, lang, fallback=True)
        warning = pack(lang).answered_extractively.format(reason=exc.message)
        return AnswerStream(context, "extractive", None, warning, _pieces=pieces(text))

    return _generate(
        generators, collection, messages, temperature, max_tokens, options, context, fallback, lang
    )


def extractive(
    collection: Collection,
    question: str,
    context: Sequence[Cited],
    language: str,
    *,
    fallback: bool = False,
) -> str:
    """The extractive answer of `collection`: its sentences scored by meaning too where its
    `llm.extractive_scorer` is `semantic` (by the collection's embedding model)."""

    def cosines(texts: list[str]) -> list[float]:
        query = collection.embed_query(question)
        return (collection.embed_passages(texts) @ query).tolist()

    semantic = collection.cfg.llm.extractive_scorer == "semantic"
    return extractive_answer(
        question,
        context,
        language,
        collection.sparse,
        fallback=fallback,
        similarity=cosines if semantic else None,
    )


def converse(
    generators: Generators,
    collection: Collection,
    messages: Messages,
    temperature: float | None = None,
    max_tokens: int | None = None,
    options: Options | None = None,
    fallback_text: str = "",
) -> AnswerStream:
    """The collection's LLM answers the client's `messages` as they are: no retrieval, no
    passages (requests that are not questions to the knowledge base). With the LLM down:
    `fallback_text`, and a warning saying so."""

    def fallback(exc: LLMUnavailable) -> AnswerStream:
        log.warning("%s: %s; not answered", collection.name, exc.message)
        warning = f"{exc.message}; not answered by the LLM"
        return AnswerStream([], "none", None, warning, _pieces=iter([fallback_text]))

    return _generate(
        generators,
        collection,
        messages,
        temperature,
        max_tokens,
        options,
        [],
        fallback,
        collection.cfg.language,
    )


def _generate(
    generators: Generators,
    collection: Collection,
    messages: Messages,
    temperature: float | None,
    max_tokens: int | None,
    options: Options | None,
    passages: list[Passage],
    fallback: Callable[[LLMUnavailable], AnswerStream],
    lang: str,
) -> AnswerStream:
    """Start the collection's LLM on `messages`; `fallback` answers when it cannot be reached;
    a warning is in `lang`."""
    cfg = collection.cfg
    generator = generators.get(cfg.llm)
    assert generator is not None, "an LLM is configured"
    temperature, max_tokens, options = limited(
        cfg.llm, temperature, max_tokens, options or Options()
    )
    generation = Generation(generator.name, generator.model, options=options)
    LLM_CALLS.labels(generator.name).inc()
    upstream = generators.stream(cfg.llm, messages, generation, temperature, max_tokens)
    try:
        first = next(upstream, "")
    except LLMUnavailable as exc:
        LLM_FAILURES.labels(generator.name).inc()
        return fallback(exc)
    result = AnswerStream(passages, generator.name, generator.model)
    result._pieces = _filtered(first, upstream, generation, result, lang)
    return result


def _filtered(
    first: Piece,
    upstream: Iterator[Piece],
    generation: Generation,
    result: AnswerStream,
    lang: str,
) -> Iterator[Piece]:
    think = ThinkFilter()
    try:
        for piece in _chain(first, upstream):
            if not isinstance(piece, str):  # a tool call piece goes to the client as it came
                yield piece
                continue
            text = think.feed(piece)
            if text:
                yield text
        rest = think.flush()
        if rest:
            yield rest
    except LLMUnavailable as exc:
        LLM_FAILURES.labels(generation.name).inc()
        log.warning("answer interrupted: %s", exc.message)
        generation.finish_reason = "error"
        result.warning = pack(lang).answer_incomplete.format(reason=exc.message)
    finally:
        upstream.close()  # type: ignore[attr-defined]
        result.usage = generation.usage
        result.finish_reason = generation.finish_reason


def _chain(first: Piece, rest: Iterator[Piece]) -> Iterator[Piece]:
    yield first
    yield from rest
