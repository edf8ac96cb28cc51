"""What this process's role (RAG_ROLE: all, writer, reader) makes of the hub's parts
(docs/scaling.md): where the scoped keys, stored responses and sources' state live, whether the
collections publish their versions or follow the writer's, and the writer's lease.

The shared parts load only where a Qdrant server is shared: the system documents need
qdrant-client, which the embedded engine (and every CLI command on it) never imports."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from rag_api.access.keys import KeysFile
from rag_api.access.links import secret_file
from rag_api.errors import ConfigError, RagError
from rag_api.openai_compat.stored import ResponseStore
from rag_api.points.collection import Collection
from rag_api.settings import Settings
from rag_api.sources.state import SourceStates, StateFiles
from rag_api.store import Store

if TYPE_CHECKING:
    from rag_api.replicas.lease import WriterLease
    from rag_api.replicas.pointers import Following, Publisher
    from rag_api.store.system import SystemDocs

log = logging.getLogger("rag_api.replicas.role")


def check(settings: Settings) -> None:
    """Refuse a role this process cannot take, before anything is opened."""
    if settings.replicated and settings.embedded:
        raise ConfigError(
            f"RAG_ROLE={settings.role} needs RAG_QDRANT_URL: the embedded engine is one process's "
            "own store, so it has no readers or writer beside it (docs/scaling.md); use "
            "RAG_ROLE=all, or a Qdrant server or cluster"
        )
    if settings.role == "reader" and not settings.writer_url:
        raise ConfigError(
            "RAG_ROLE=reader needs RAG_WRITER_URL: the writer this reader sends writes to"
        )


def describe(settings: Settings) -> str:
    """The role in the start line."""
    if settings.role == "reader":
        return f"a reader (writes go to {settings.writer_url})"
    return {"writer": "the writer", "all": "the only process (RAG_ROLE=all)"}[settings.role]


def system_docs(settings: Settings) -> SystemDocs:
    """The deployment's system documents, through a store of their own (the CLI's keys)."""
    from rag_api.store import open_store

    store = open_store(settings)
    return store.system  # type: ignore[attr-defined]


def keys_file(settings: Settings, docs: SystemDocs | None = None) -> KeysFile:
    """The scoped keys: the file of this node, or for replicas the deployment's copy in Qdrant."""
    if not settings.replicated:
        return KeysFile(settings.keys_path)
    from rag_api.replicas.shared_keys import SharedKeys

    return SharedKeys(docs or system_docs(settings), settings.keys_path, settings.writes)


class Role:
    """Made by the hub with its store; `join` its collections, `start` and `stop` with it."""

    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.name = settings.role
        self.docs: SystemDocs | None = getattr(store, "system", None)
        self._lease: WriterLease | None = None
        self._publisher: Publisher | None = None
        self._following: Following | None = None

    def keys(self) -> KeysFile:
        return keys_file(self.settings, self.docs)

    def responses(self) -> ResponseStore:
        s = self.settings
        if s.replicated and self.docs is not None:
            from rag_api.replicas.shared_responses import SharedResponses

            return SharedResponses(self.docs, s.responses_path, s.responses_ttl, s.responses_max)
        return ResponseStore(s.responses_path, s.responses_ttl, s.responses_max)

    def source_states(self) -> SourceStates:
        """Where the sources' state is kept: this node's data dir, or for replicas Qdrant's system
        collection (a new writer carries on where the last one stopped)."""
        if self.settings.replicated and self.docs is not None:
            from rag_api.replicas.shared_sources import SharedStates

            return SharedStates(self.docs)
        return StateFiles(self.settings.data_dir / "sources")

    def link_secret(self) -> Callable[[], bytes]:
        """The secret that signs passage links: RAG_LINK_SECRET, else this node's own file, or for
        replicas the deployment's (a link a reader gave opens on every node)."""
        s = self.settings
        if s.replicated and self.docs is not None and not s.link_secret:
            from rag_api.replicas.shared_links import shared_secret

            return shared_secret(self.docs, makes=s.writes)
        return secret_file(s.data_dir / "passage-links.key", s.link_secret)

    def join(self, collections: list[Collection]) -> None:
        """A reader's collections follow the writer; the writer's publish their writes."""
        if not self.settings.replicated or self.docs is None:
            return
        from rag_api.replicas.pointers import Follower, Following, Publisher

        if self.name == "reader":
            follower = Follower(self.docs)
            for collection in collections:
                collection.follow = follower.published
            self._following = Following(collections)
        else:
            self._publisher = Publisher(self.docs)
            for collection in collections:
                collection.publish = self._publisher.publish

    def start(self, collections: list[Collection]) -> None:
        """A server that writes a shared deployment takes the writer's lease (refused when another
        holds it), then publishes where each collection stands; a reader's server renews what
        it follows off its requests."""
        if self._following is not None:
            self._following.start()
        if not self.settings.writes or self.docs is None:
            return
        from rag_api.replicas.lease import WriterLease

        self._lease = WriterLease(self.docs).take()
        if self._lease.lapsed:  # the writer before died: complete what it cut short
            for collection in collections:
                try:
                    torn = collection.recover()
                except RagError as exc:
                    log.error("%s: not recovered: %s", collection.name, exc.message)
                    continue
                if torn:
                    log.warning("%s: %d torn replacements completed", collection.name, len(torn))
        if self._publisher is not None:
            for collection in collections:
                self._publisher.publish(collection)

    def stop(self) -> None:
        following, self._following = self._following, None
        if following is not None:
            following.stop()
        lease, self._lease = self._lease, None
        if lease is not None:
            lease.release()
