"""The nightly retrieval check: a collection with `eval: questions.jsonl` in collections.yaml is
measured with its own settings at every `rag-hub check`, and a drop of nDCG@10 by more than
RAG_EVAL_MARGIN since the previous run is a finding (a changed model or a bad import shows up the
next morning). Each run's result is kept in RAG_DATA_DIR/eval/<collection>.json.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rag_api.atomic import write_atomically
from rag_api.catalog import Catalog
from rag_api.errors import RagError
from rag_api.evaluation.questions import configured_file, load_questions
from rag_api.evaluation.run import run

log = logging.getLogger("rag_api.evaluation")
METRIC = "ndcg@10"


def record_path(hub: Catalog, name: str) -> Path:
    return hub.settings.data_dir / "eval" / f"{name}.json"


def nightly(hub: Catalog, name: str) -> str | None:
    """Measure `name` on its eval file and record it; the problem to report, if any (None when
    no file is configured, on the first run, or when nDCG@10 held)."""
    path = configured_file(hub.config, name)
    if path is None:
        return None
    try:
        questions = load_questions(path)
        kb = hub.collection(name, enabled_only=False)
        summary = run(kb, questions, kb.cfg.retrieval, timed=True).summary(10)
    except RagError as exc:
        return f"eval file {path}: {exc.message}"
    now = {
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "questions": str(path),
        "settings": kb.cfg.retrieval.model_dump(),
        **summary,
    }
    record = record_path(hub, name)
    last = _read(record)
    record.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(record, json.dumps(now, indent=2) + "\n")
    if last is None or last.get(METRIC) is None or summary[METRIC] is None:
        return None
    drop = last[METRIC] - summary[METRIC]
    if drop <= hub.settings.eval_margin:
        return None
    return (
        f"{METRIC} on {path.name} fell from {last[METRIC]:.4f} ({last.get('at', '?')}) to "
        f"{summary[METRIC]:.4f}, more than RAG_EVAL_MARGIN {hub.settings.eval_margin}: a changed "
        "model, settings or import? `rag-hub eval` shows each mode"
    )


def _read(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("%s: unreadable, the next check starts a new record (%s)", path, exc)
        return None
