"""The scoped keys of a deployment of replicas: the keys file's document, kept in Qdrant's system
collection so that a key created, rotated or revoked on one node holds on every node within a
second (rag_api.access.keyring looks at its stamp once a second)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rag_api.access.keys import Key, KeysFile, document_of, keys_of
from rag_api.store.system import SystemDocs

KIND, KEY = "keys", "scoped"


class SharedKeys(KeysFile):
    """KeysFile's calls on the document in Qdrant; the first use imports a node's keys file when
    the deployment has none yet (a hub that was `all` becoming the writer keeps its keys)."""

    def __init__(self, docs: SystemDocs, imported: Path) -> None:
        super().__init__(imported)
        self.docs = docs
        self._seen: dict[str, Any] | None = None  # the document the last stamp() read

    def __str__(self) -> str:
        return f"Qdrant ({KIND})"

    def stamp(self) -> object:
        self._seen = self._document()
        return self._seen.get("revision")

    def load(self) -> list[Key]:
        document, self._seen = self._seen or self._document(), None
        return keys_of(document, self)

    def save(self, keys: list[Key]) -> None:
        revision = int((self.docs.get(KIND, KEY) or {}).get("revision", 0)) + 1
        self.docs.put(KIND, KEY, document_of(keys) | {"revision": revision})

    def _document(self) -> dict[str, Any]:
        document = self.docs.get(KIND, KEY)
        if document is None:
            local = super().load()  # nothing shared yet: this node's file, if any
            self.save(local)
            document = self.docs.get(KIND, KEY) or {}
        return document
