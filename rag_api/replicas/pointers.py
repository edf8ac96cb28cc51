"""Each collection as the writer last left it, published for the readers (docs/scaling.md): the
physical collection and its embedder together, and a version that changes with every write
section. A reader follows these rather than the alias, so a migration's or restore's swap reaches
it as one change (never another model's vectors under the old model), and its caches keyed by
`Collection.version()` (prefetched answers, `auto`'s samples) see the writer's writes."""

from __future__ import annotations

import logging
import threading
import uuid

from rag_api.config import EmbedderConfig
from rag_api.errors import RagError
from rag_api.points.collection import Collection
from rag_api.points.published import Published
from rag_api.store.system import SystemDocs

log = logging.getLogger("rag_api.replicas.pointers")
KIND = "collection"
RENEW_S = 0.5  # a reader looks at what the writer published this often (the bound is 2 s)


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


class Following:
    """A reader's renewal of what the writer published, in a thread of its own every RENEW_S: a
    request reads the last look-up (a Qdrant round trip or two) instead of making it, and the
    readers still follow within the 2 s bound (docs/scaling.md)."""

    def __init__(self, collections: list[Collection]) -> None:
        self.collections = collections
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._renew()  # the first look-ups before any request
        for collection in self.collections:
            collection.renewed = True
        self._thread = threading.Thread(target=self._run, name="rag-follow", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        for collection in self.collections:
            collection.renewed = False
        if self._thread is not None:
            self._thread.join(5.0)

    def _run(self) -> None:
        while not self._stop.wait(RENEW_S):
            self._renew()

    def _renew(self) -> None:
        for collection in self.collections:
            try:
                collection.info(refresh=True)
            except RagError as exc:  # the last look-up stands; a request retries past its age
                log.warning("%s: not followed: %s", collection.name, exc.message)
