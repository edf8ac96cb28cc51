"""An evaluation request (HTTP body and CLI alike) and its execution on an open hub: the one
entry point `rag-hub eval`, `POST /v1/collections/{collection}/eval` and their clients share."""

from __future__ import annotations

import time
from typing import Annotated, Any

from pydantic import ConfigDict, Field, model_validator

from rag_api.catalog import Catalog
from rag_api.config import Mode
from rag_api.errors import InvalidRequest
from rag_api.evaluation.generate import MAX_GENERATE, WARNING, draft
from rag_api.evaluation.questions import MAX_QUESTIONS, parse_rows
from rag_api.evaluation.run import MODES, embed_all, families, label, run
from rag_api.evaluation.tune import Tuner
from rag_api.schema import Body


class EvalBody(Body):
    """What to measure: the questions (objects as in a question file) or `generate` drafts."""

    model_config = ConfigDict(extra="forbid")

    questions: Annotated[list[dict[str, Any]], Field(max_length=MAX_QUESTIONS)] | None = None
    generate: Annotated[int, Field(ge=1, le=MAX_GENERATE)] | None = None
    modes: Annotated[list[Mode], Field(min_length=1)] | None = None
    k: Annotated[int, Field(ge=1, le=100)] = 10
    tune: bool = False
    # each row measured twice, with and without the collection's reranker (its rerank block)
    compare_rerank: bool = False

    @model_validator(mode="after")
    def _one_source_of_questions(self) -> EvalBody:
        if (self.questions is None) == (self.generate is None):
            raise ValueError("give either 'questions' or 'generate' (how many to draft)")
        return self


def run_eval(
    hub: Catalog, collection: str, body: EvalBody, max_seconds: float | None = None
) -> dict[str, Any]:
    """The table per mode and fusion, and with `tune` the best settings; a bounded run
    (`max_seconds`: an HTTP request) that would take longer raises EvalTooLong (413)."""
    started = time.monotonic()
    deadline = None if max_seconds is None else started + max_seconds
    kb = hub.collection(collection)
    current = kb.cfg.retrieval
    if body.generate is not None:
        questions = draft(kb, body.generate)
        if not questions:
            raise InvalidRequest(f"collection '{kb.name}' has no chunks to draft questions from")
    else:
        questions = parse_rows(list(enumerate(body.questions or [], 1)), "questions")
    modes = tuple(body.modes or MODES)
    known = kb.sources()
    unknown = sorted({s for q in questions for s in q.sources} - set(known))
    rows = []
    vectors = embed_all(kb, questions, modes)
    reranker = kb.cfg.rerank
    if body.compare_rerank and reranker is None:
        raise InvalidRequest(
            f"collection '{kb.name}' has no rerank block to compare with", param="compare_rerank"
        )
    configured = reranker is not None and reranker.enabled
    for settings in families(current, modes):
        for rerank in (True, False) if body.compare_rerank else (None,):
            result = run(kb, questions, settings, body.k, vectors, deadline, True, rerank)
            name = label(settings) + {True: " +rerank", False: " -rerank", None: ""}[rerank]
            same = rerank is None or rerank == configured
            row = {"label": name, "configured": settings == current and same}
            rows.append(row | result.summary(body.k))
    response: dict[str, Any] = {
        "collection": kb.name,
        "questions": len(questions),
        "in_scope": sum(q.in_scope for q in questions),
        "k": body.k,
        "configured": label(current),
        "rows": rows,
        "unknown_sources": unknown,
    }
    if body.tune:
        response["tune"] = Tuner(kb, questions, current, body.k, deadline, modes).tune().as_dict()
    if body.generate is not None:
        response["generated"] = [q.as_dict() for q in questions]
        response["warning"] = WARNING
    response["seconds"] = round(time.monotonic() - started, 2)
    return response
