"""Each collection as the writer last left it, published for the readers (docs/scaling.md): the
physical collection and its embedder together, and a version that changes with every write
section. A reader follows these rather than the alias, so a migration's or restore's swap reaches
it as one change (never another model's vectors under the old model), and its caches keyed by
`Collection.version()` (prefetched answers, `auto`'s samples) see the writer's writes."""

from __future__ import annotations

import logging
import uuid

from rag_api.config import EmbedderConfig
from rag_api.errors import RagError
from rag_api.points.collection import Collection
from rag_api.points.published import Published
from rag_api.store.system import SystemDocs

log = logging.getLogger("rag_api.replicas.pointers")
KIND = "collection"


class Publisher:
    """The writer's side: `publish(collection)` after each write section (and at start)."""

    def __init__(self, docs: SystemDocs) -> None:
        self.docs = docs
        self.process = uuid.uuid4().hex[:12]  # a restarted writer counts its writes anew

    def publish(self, collection: Collection) -> None:
        try:
            info = collection.info()
            if info is None:
                return
            document = {
                "physical": info.physical,
                "embedder": collection.cfg.embedder.model_dump(mode="json"),
                "version": [self.process, collection.version()[1]],
            }
            self.docs.put(KIND, collection.name, document)
        except RagError as exc:  # the write itself is done; readers follow at the next one
            log.warning("%s: not published to the readers: %s", collection.name, exc.message)


class Follower:
    """A reader's side: what the writer published of a collection, read when asked."""

    def __init__(self, docs: SystemDocs) -> None:
        self.docs = docs

    def published(self, name: str) -> Published | None:
        document = self.docs.get(KIND, name)
        if document is None:
            return None
        return Published(
            document["physical"],
            EmbedderConfig.model_validate(document["embedder"]),
            (document["version"][0], int(document["version"][1])),
        )
