"""Where each source's state is kept between syncs: its own (a Git commit, a crawl's links and the
pages that answered 404 once) and how its last syncs went. One node keeps a JSON file per source
in RAG_DATA_DIR/sources/; replicas keep it in Qdrant's system collection
(rag_api.replicas.shared_sources), so a new writer carries on where the last one stopped. The
versions of the documents themselves live on their chunks (payload `version`)."""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rag_api.atomic import write_atomically

log = logging.getLogger("rag_api.sources.state")


def fingerprint(cfg: Any) -> str:
    """What the source's own state depends on (where it reads from): a changed block starts over
    (a new repository's commits mean nothing to the old one's)."""
    block = cfg.model_dump(mode="json", exclude={"name", "every", "concurrency"})
    text = json.dumps(block, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class SourceState:
    """A source's record: its own state and how its syncs went."""

    fingerprint: str = ""
    state: dict[str, Any] = field(default_factory=dict)  # the source's own (SourceContext.state)
    last: dict[str, Any] | None = None  # the last sync: when, status, its report or error
    last_at: float | None = None  # when the last sync ended, well or not (epoch seconds)
    last_ok_at: float | None = None  # when a sync last ended well
    failures: int = 0  # syncs failed in a row

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SourceState:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def for_block(self, cfg: Any) -> SourceState:
        """This record, its own state dropped if the block it was made with changed."""
        now = fingerprint(cfg)
        if self.fingerprint != now:
            self.fingerprint, self.state = now, {}
        return self


class SourceStates(Protocol):
    def load(self, collection: str, source: str) -> SourceState: ...

    def save(self, collection: str, source: str, record: SourceState) -> None: ...


class StateFiles:
    """One node's: RAG_DATA_DIR/sources/<collection>/<source>.json, replaced atomically."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, collection: str, source: str) -> Path:
        return self.folder / collection / f"{source}.json"

    def load(self, collection: str, source: str) -> SourceState:
        path = self.path(collection, source)
        try:
            return SourceState.from_dict(json.loads(path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            return SourceState()
        except (OSError, ValueError, TypeError) as exc:  # a damaged file: start over, say so
            log.warning("%s: unreadable (%s): the source starts over", path, exc)
            return SourceState()

    def save(self, collection: str, source: str, record: SourceState) -> None:
        path = self.path(collection, source)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, json.dumps(asdict(record), ensure_ascii=False))
