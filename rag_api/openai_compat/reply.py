"""One OpenAI-style turn on the core pipeline: route, retrieve, answer, then cite the sources."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from rag_api.access.links import LinkRefused, PassageLinks
from rag_api.answering.answer import AnswerStream, answer, converse
from rag_api.answering.client_params import refuse_params
from rag_api.answering.models import Filters
from rag_api.catalog import Catalog
from rag_api.embedding.languages import text_language
from rag_api.errors import InvalidRequest
from rag_api.llm.generators import Options, Piece, ToolCallDelta
from rag_api.llm.prompts import Cited, pack
from rag_api.openai_compat.condense import condensed_search
from rag_api.openai_compat.conversation import Conversation
from rag_api.openai_compat.model_names import direct_collection, target
from rag_api.openai_compat.tasks import TaskPrompt, task_prompt
from rag_api.points.collection import Collection
from rag_api.routing import Target, candidates, search_target
from rag_api.search.retrieval import SearchRequest

_CITATION = re.compile(r"\[(\d+)\]")


@dataclass
class Reply:
    """An answer for an OpenAI client: the answer's pieces as they arrive, then a citations footer.

    Retrieval is done when a Reply exists (its errors are the request's); the answer starts at the
    first use of `stream`, which waits for the LLM's first token: a stream's head and keep-alive
    comments go out while it waits (rag_api.http.sse)."""

    model: str  # as the client asked for it: echoed in every response
    collection: Collection
    start: Callable[[], AnswerStream]
    retrieval_warning: str | None = None
    routing: dict[str, Any] | None = None  # `auto`: which collections were searched and why
    language: str | None = None  # the answer's, when `auto` chose it
    structured: bool = False  # the client asked for JSON: no footer inside it
    # where people reach the hub (RAG_PUBLIC_URL, else the request's base URL), and the hub's
    # passage links: the footer links each cited passage to its page (signed: it opens without a
    # key); either None, or links off (RAG_LINK_TTL=off): plain names
    base_url: str | None = None
    links: PassageLinks | None = None
    retrieval: dict[str, str] | None = None  # what was searched: a follow-up merged or alone
    _parts: list[str] = field(default_factory=list)
    _calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    _stream: AnswerStream | None = None

    @property
    def stream(self) -> AnswerStream:
        """The answer, started on first use."""
        if self._stream is None:
            self._stream = self.start()
        return self._stream

    def pieces(self) -> Iterator[Piece]:
        """Text and tool call pieces as the generator produces them, then the footer (read once)."""
        for piece in self.stream:
            if isinstance(piece, str):
                self._parts.append(piece)
            else:
                self._add_call(piece)
            yield piece
        footer = self.footer()
        if footer:
            self._parts.append(footer)
            yield footer

    def _add_call(self, piece: ToolCallDelta) -> None:
        call = self._calls.setdefault(
            piece.index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
        )
        call["id"] = piece.id or call["id"]
        call["function"]["name"] += piece.name or ""
        call["function"]["arguments"] += piece.arguments

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """The tool calls `pieces()` has produced so far, whole, in OpenAI's message form."""
        return [self._calls[index] for index in sorted(self._calls)]

    def text(self) -> str:
        """The whole answer, footer included."""
        for _ in self.pieces():
            pass
        return self.content

    @property
    def content(self) -> str:
        """What `pieces()` has produced so far."""
        return "".join(self._parts)

    def footer(self) -> str:
        """'Sources: [1] a.md; [2, 3] b.md' for the passages the answer cites, unless disabled."""
        passages = self.stream.passages
        if not passages or not self.collection.cfg.citations or self.structured or self._calls:
            return ""  # JSON and tool calls go to programs: the sources stay in `sources`
        language = self.language or self.collection.cfg.language
        linked = self.base_url is not None and self.links is not None and self.links.enabled
        try:
            return citations_footer(self.content, passages, language, self.link if linked else None)
        except LinkRefused:  # no secret to sign with yet (a reader before its writer): plain
            return citations_footer(self.content, passages, language)

    def link(self, passage: Cited) -> str:
        """Where a person reads `passage`: its passage page, under a link that authorises it."""
        assert self.links is not None and self.base_url is not None
        collection = getattr(passage, "collection", None) or self.collection.name
        index = getattr(passage, "chunk_index", 0)
        return self.links.url(self.base_url, collection, passage.source, index)

    @property
    def finish_reason(self) -> str:
        # an upstream that broke mid-answer ("error") is reported in `warning`, not as a reason
        if self._calls:
            return "tool_calls"
        return "length" if self.stream.finish_reason == "length" else "stop"

    def extra(self) -> dict[str, Any]:
        """The hub's own top-level fields: the sources, who answered, and any warning."""
        fields: dict[str, Any] = {
            "sources": [p.as_dict() for p in self.stream.passages],
            "generator": self.stream.generator,
        }
        warning = self.stream.warning or self.retrieval_warning
        if warning:
            fields["warning"] = warning
        if self.routing is not None:
            fields["routing"] = self.routing
        if self.retrieval is not None:
            fields["retrieval"] = self.retrieval
        return fields

    def close(self) -> None:
        """Stop generating: the client went away (before the answer started: nothing to stop)."""
        if self._stream is not None:
            self._stream.close()


def start_reply(
    hub: Catalog,
    model: str,
    conversation: Conversation,
    temperature: float | None,
    max_tokens: int | None,
    options: Options | None = None,
    format_param: str = "response_format",
    filters: Filters | None = None,
    base_url: str | None = None,
    links: PassageLinks | None = None,
) -> Reply:
    """Route `model` to a collection (or let `auto` choose), retrieve for the conversation with
    `filters` and start the answer (`options` go to the LLM as sent); the sources footer links
    each cited passage to its page under `base_url`, signed by `links`. A retrieval-free model
    (`<c>:llm`) or a client's task prompt (rag_api.openai_compat.tasks) is answered without
    retrieval."""
    filters = filters or Filters()
    task = task_prompt(conversation.question)
    direct = direct_collection(hub, model)
    if direct is not None or task is not None:
        collection = hub.collection(direct) if direct else target(hub, model).collection
        return _without_retrieval(
            hub,
            model,
            collection or _fallback(hub),
            conversation,
            task,
            temperature,
            max_tokens,
            options or Options(),
            format_param,
        )
    to = target(hub, model)
    if to.collection is not None:  # a named collection's limits refuse before the search
        check_support(hub, to.collection, options or Options(), format_param, temperature)
    found, retrieval = condensed_search(
        conversation,
        _reader(hub, to, conversation),
        lambda text: search_target(hub, to, filters.applied(SearchRequest(query=text))),
    )
    collection, passages, warning = found.answering, found.passages, found.warning
    routing = found.routing.as_dict() if found.routing is not None else None
    language = found.routed_language
    if to.collection is None:  # `auto`: the collection that answers is known once routed
        check_support(hub, collection, options or Options(), format_param, temperature)
    start = partial(
        answer,
        hub.generators,
        collection,
        conversation.question,
        passages,
        history=conversation.history,
        client_system=conversation.system,
        temperature=temperature,
        max_tokens=max_tokens,
        language=language,
        options=options,
        after=conversation.after,
    )
    structured = options is not None and options.response_format is not None
    return Reply(
        model,
        collection,
        start,
        warning,
        routing,
        language,
        structured,
        base_url,
        links,
        retrieval=retrieval.as_dict(),
    )


def _without_retrieval(
    hub: Catalog,
    model: str,
    collection: Collection,
    conversation: Conversation,
    task: TaskPrompt | None,
    temperature: float | None,
    max_tokens: int | None,
    options: Options,
    format_param: str,
) -> Reply:
    """The collection's LLM answers the conversation as sent; without an LLM only a task prompt
    is answered (its minimal JSON), anything else is refused naming `model`."""
    minimal = task.minimal_answer() if task else ""
    if hub.generators.get(collection.cfg.llm) is None:
        if task is None:
            raise InvalidRequest(
                f"model: '{model}' has no LLM to answer without retrieval ('{collection.name}' "
                "answers extractively); it takes only client task prompts (docs/openai.md)",
                param="model",
            )
        start: Callable[[], AnswerStream] = partial(
            AnswerStream, [], "none", None, _pieces=iter([minimal])
        )
    else:
        check_support(hub, collection, options, format_param, temperature)
        start = partial(
            converse,
            hub.generators,
            collection,
            conversation.messages(),
            temperature,
            max_tokens,
            options,
            minimal,
        )
    return Reply(model, collection, start)


def check_support(
    hub: Catalog,
    collection: Collection,
    options: Options,
    format_param: str = "response_format",
    temperature: float | None = None,
) -> None:
    """Refuse (400, naming the parameter) what the collection's llm block refuses from clients
    (`llm.client_params`) and what its generator cannot do and the client cannot do without:
    JSON output, a forced tool call. Tools it may call (`auto`) are simply not offered to a
    generator without tools: its plain answer is a valid reply."""
    refuse_params(collection.cfg.llm, temperature, options)
    generator = hub.generators.get(collection.cfg.llm)
    who = (
        "the extractive generator (no LLM configured)"
        if generator is None
        else f"this collection's LLM ({generator.name})"
    )
    if options.response_format is not None and not (generator and generator.structured):
        raise InvalidRequest(
            f"{format_param}: {who} cannot produce structured output", param=format_param
        )
    if options.tools and options.forced_tool and not (generator and generator.forces_tools):
        raise InvalidRequest(
            f"tool_choice: {who} cannot be made to call a tool; send 'auto' or 'none'",
            param="tool_choice",
        )


def _reader(hub: Catalog, to: Target, conversation: Conversation) -> Collection:
    """The collection whose analyser recognises a follow-up: the named one; for `auto`, one in
    the question's language (else `_fallback`'s), then routed like any question."""
    if to.collection is not None:
        return to.collection
    routable = candidates(hub, None)
    language = text_language(conversation.question, [c.cfg.language for c in routable])
    return next((c for c in routable if c.cfg.language == language), _fallback(hub))


def _fallback(hub: Catalog) -> Collection:
    """`auto`'s collection when nothing else decides: default_collection, or the key's first."""
    return hub.collection() if hub.default_visible() else candidates(hub, None)[0]


def citations_footer(
    text: str,
    passages: Sequence[Cited],
    language: str,
    link: Callable[[Cited], str] | None = None,
) -> str:
    """The cited passages' sources (every passage's when the text cites none): plain, grouped by
    source; with `link`, each passage a markdown link of its own to its page, and the original's
    own address beside it where its source has one (a web page, a file's web view)."""
    numbers = sorted({int(n) for n in _CITATION.findall(text)} & set(range(1, len(passages) + 1)))
    cited = numbers or range(1, len(passages) + 1)
    if link is None:
        by_source: dict[str, list[int]] = {}
        for n in cited:
            by_source.setdefault(passages[n - 1].source, []).append(n)
        items = [f"[{', '.join(map(str, ns))}] {source}" for source, ns in by_source.items()]
    else:
        items = [_linked(n, passages[n - 1], link(passages[n - 1])) for n in cited]
    return f"\n\n{pack(language).sources_label}: {'; '.join(items)}"


def _linked(n: int, passage: Cited, url: str) -> str:
    """`[n] [source](passage page)`, and `[↗](original)` where the source has one."""
    text = re.sub(r"([\\\[\]])", r"\\\1", passage.source)
    item = (
        f"[{n}] [{text}]({url})"  # the url's query and path are percent-encoded: no space, no ")"
    )
    original = getattr(getattr(passage, "stored", None), "url", None)
    return f"{item} [↗]({original})" if original else item
