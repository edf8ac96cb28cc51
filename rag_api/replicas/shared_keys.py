"""The scoped keys of a deployment of replicas: the keys file's document, kept in Qdrant's system
collection so that a key created, rotated or revoked on one node holds on every node within a
second (rag_api.access.keyring looks at its stamp once a second).

The writer creates the document at its first start, importing its node's keys file (a hub that was
`all` keeps its keys). Until then a reader knows no key and refuses every one: it never opens the
routes that keys close. While Qdrant cannot be read, the keys last read stay in force."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from rag_api.access.keys import Key, KeysFile, document_of, keys_of
from rag_api.errors import RagError
from rag_api.store.system import SystemDocs

log = logging.getLogger("rag_api.replicas.shared_keys")
KIND, KEY = "keys", "scoped"


class SharedKeys(KeysFile):
    """KeysFile's calls on the document in Qdrant; `imports`: the writer's (see above)."""

    def __init__(self, docs: SystemDocs, imported: Path, imports: bool) -> None:
        super().__init__(imported)
        self.docs = docs
        self.imports = imports
        self._seen: dict[str, Any] | None = None  # the document the last stamp() read
        self._stamp: object = None
        self._missing = False

    def __str__(self) -> str:
        return f"Qdrant ({KIND})"

    @property
    def closed(self) -> bool:
        return self._missing

    def stamp(self) -> object:
        try:
            self._seen = self._document()
        except RagError as exc:  # the keys as they were; a first read fails the start
            if self._stamp is None:
                raise
            log.warning("scoped keys not re-read: %s", exc.message)
            return self._stamp
        self._stamp = (self._seen.get("revision"), self._missing)
        return self._stamp

    def load(self) -> list[Key]:
        document, self._seen = self._seen or self._document(), None
        return keys_of(document, self)

    def save(self, keys: list[Key]) -> None:
        revision = int((self.docs.get(KIND, KEY) or {}).get("revision", 0)) + 1
        self.docs.put(KIND, KEY, document_of(keys) | {"revision": revision})

    def _document(self) -> dict[str, Any]:
        document = self.docs.get(KIND, KEY)
        if document is None and self.imports:
            self.save(super().load())  # nothing shared yet: this node's file, if any
            document = self.docs.get(KIND, KEY)
        self._missing = document is None
        return document or {"keys": []}
