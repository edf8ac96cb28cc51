"""The physical collections behind one hub name (docs__v1, docs__v2, ...) and what each was built with."""

from __future__ import annotations

import json
from pathlib import Path

from rag_api.atomic import write_atomically
from rag_api.config import EmbedderConfig
from rag_api.store import Store, version_of


def versions(store: Store, name: str) -> list[str]:
    """Every physical collection of a hub name, oldest first."""
    found = [p for p in store.physical_collections() if p.rpartition("__v")[0] == name]
    return sorted((p for p in found if version_of(p) > 0), key=version_of)


class EmbedderHistory:
    """Which embedder configuration built each physical collection, so a rollback can restore it.

    Kept in the data dir (data/migrations/NAME.json), written atomically; the store itself has no
    place for it on the embedded engine.
    """

    def __init__(self, data_dir: Path, name: str) -> None:
        self.path = Path(data_dir) / "migrations" / f"{name}.json"

    def read(self) -> dict[str, dict]:
        try:
            return json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}

    def get(self, physical: str) -> EmbedderConfig | None:
        entry = self.read().get(physical)
        return EmbedderConfig.model_validate(entry) if entry else None

    def record(self, physical: str, embedder: EmbedderConfig) -> None:
        data = self.read()
        data[physical] = embedder.model_dump(exclude_defaults=True)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(self.path, json.dumps(data, indent=2, sort_keys=True))
