"""The hub, the composition root: it creates and owns everything that lives as long as the server
(or a command) — the catalog's store, models, jobs, fan-out pool and probe samples, the keyring,
the generation pool, stored responses, uploads, the sources' syncs and the folder watcher — and closes them in one
place; and it offers each surface's calls (`hub.kb`, `hub.query`, `hub.ops`), which return the
surface's declared answers. The app keeps the hub and nothing else (`app.state.hub`); the CLI
opens one per command.

The layers below the surfaces take the hub as a `Catalog` (rag_api.catalog): the store, the
collections and their models. What only a server runs — uploads, the watcher, the writer's lease —
starts with `start()` and stops with `stop()`; `close()` stops them too, then closes the catalog.
The role (`RAG_ROLE`, rag_api.replicas.role) decides where the keys and stored responses live and
whether the collections publish their writes or follow another process's (docs/scaling.md).
"""

from __future__ import annotations

from typing import Self

from rag_api.access.keyring import Keyring
from rag_api.access.links import PassageLinks
from rag_api.access.tokens import oidc_of
from rag_api.answering.service import Queries
from rag_api.catalog import Catalog
from rag_api.config import HubConfig
from rag_api.kbadmin.service import KbAdmin
from rag_api.llm.pool import GenerationPool
from rag_api.ops.local import LocalOps
from rag_api.replicas.role import Role
from rag_api.replicas.role import check as check_role
from rag_api.settings import Settings
from rag_api.sources.service import Sources
from rag_api.store import Store
from rag_api.uploads.service import Uploads
from rag_api.watcher import Watcher


class Hub(Catalog):
    """Open with `Hub.open(settings)`; `start()` what a server runs beside it; `close()` at the end."""

    def __init__(self, settings: Settings, config: HubConfig, store: Store) -> None:
        super().__init__(settings, config, store)
        # all, writer or reader: where shared state lives, and who writes (docs/scaling.md)
        self.role = Role(settings, store)
        self.role.join(list(self.collections.values()))
        # who may do what: global and scoped keys, and an identity provider's access tokens
        self.keyring = Keyring(settings, self.role.keys(), oidc_of(settings, config.access))
        # citations' passage links, signed with this node's secret or the deployment's
        self.links = PassageLinks(self.role.link_secret(), settings.link_ttl_s)
        self.generation = GenerationPool(settings.max_generations)  # where LLM work runs
        self.responses = self.role.responses()  # /v1/responses kept for previous_response_id
        # the surfaces as calls (HTTP, the CLI and agents' tools call these)
        self.kb = KbAdmin(self)  # /v1/rag/*: the knowledge bases' reads and writes
        self.query = Queries(self)  # /query: retrieve, then answer
        self.ops = LocalOps(self)  # operations: check, migrate, backup, restore, ...
        self.sources = Sources(self, self.role.source_states())  # syncs; scheduled by start()
        self.uploads: Uploads | None = None  # started by start()
        self.watcher: Watcher | None = None  # started by start(watch=True)

    @classmethod
    def open(
        cls, settings: Settings, config: HubConfig | None = None, store: Store | None = None
    ) -> Self:
        check_role(settings)
        return super().open(settings, config, store)

    def recover(self) -> None:
        if self.settings.writes:  # a reader has nothing of its own to recover: the writer does
            super().recover()
        elif self.marker is not None:
            self.marker.recovered()

    def start(self, watch: bool = False) -> Self:
        """Start the keys' refresh, the upload queue, the sources' schedule and, with `watch`,
        the folder watcher (`serve --watch`); a reader starts only the refreshes of what it
        follows (its writes go to the writer), a writer first takes the lease."""
        self.keyring.start()  # the keys re-read off the requests
        self.role.start(list(self.collections.values()))
        if not self.settings.writes:
            return self
        self.links.secret()  # made now: a reader's first link must find the writer's
        if watch and self.watcher is None:
            self.watcher = Watcher(self).start()
        if self.uploads is None:
            self.uploads = Uploads(self).start()
        self.sources.start()
        return self

    def stop(self) -> None:
        """Stop what start() started (the indexing in progress finishes first; a sync stops
        after the document it is at)."""
        self.sources.stop()
        uploads, self.uploads = self.uploads, None
        if uploads is not None:
            uploads.stop()
        watcher, self.watcher = self.watcher, None
        if watcher is not None:
            watcher.stop()
        self.role.stop()
        self.keyring.stop()

    def close(self) -> None:
        self.stop()
        self.kb.close()
        super().close()
