"""The catalog: the configured collections with the store and the models they use — embedders,
generators, rerankers — and the jobs, the fan-out pool of `auto` and its probe samples, opened
once; the part of the hub (rag_api.hub) that the layers between the store and the surfaces work
with. What GET /collections answers of each collection (`CollectionSummary`) is declared here."""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Self

from rag_api.access.grant import allowed
from rag_api.config import HubConfig, Mode, load_config
from rag_api.embedding.embedders import Embedders
from rag_api.errors import CollectionDisabled, CollectionNotFound, RagError, StoreUnavailable
from rag_api.jobs.book import Jobs
from rag_api.llm.generators import Generators
from rag_api.llm.rerankers import Rerankers
from rag_api.observability.request_context import note_collection
from rag_api.points.collection import Collection
from rag_api.points.typical import TypicalPassages
from rag_api.schema import Answer
from rag_api.settings import Settings
from rag_api.store import Store, open_store
from rag_api.store.open_marker import OpenMarker

log = logging.getLogger("rag_api.catalog")
FANOUT = 8  # threads that search several collections at once (`auto`)


class CollectionSummary(Answer):
    name: str
    description: str
    enabled: bool
    language: str
    kb: str | None
    embedder: str  # provider:model
    dim: int
    device: str  # where the embedder runs (cpu, cuda:N, mps) or a remote model's URL
    precision: str | None  # fp32, fp16, bf16 or int8; null for a remote embedder
    mode: Mode
    llm: str  # "extractive" or provider:model
    rerank: dict[str, Any] | None  # as in /v1/rag/status; null without an enabled rerank block
    physical: str | None  # the Qdrant collection the alias points at
    points: int
    hybrid: bool  # the store holds BM25 vectors
    error: dict[str, str] | None = None  # code and message, when the store could not be read


class CollectionList(Answer):
    default_collection: str | None  # null: the key may not read it
    collections: list[CollectionSummary]


class Catalog:
    """What a search or an answer needs. Open with `open(settings)`; close when done."""

    def __init__(self, settings: Settings, config: HubConfig, store: Store) -> None:
        self.settings = settings
        self.config = config
        self.store = store
        self.marker: OpenMarker | None = None  # set by open(): one built by hand keeps none
        self.embedders = Embedders(settings)
        self.generators = Generators(settings)
        self.rerankers = Rerankers(settings)
        self.collections = {
            name: Collection(name, cfg, config.kb_path(name), store, self.embedders, self.rerankers)
            for name, cfg in config.collections.items()
        }
        self.typical = TypicalPassages()  # `auto`'s sample of each collection's passages
        self.jobs = Jobs(history_of={"upload": settings.upload_history})  # and their lanes
        self.fanout = ThreadPoolExecutor(FANOUT, thread_name_prefix="rag-fanout")

    @classmethod
    def open(
        cls, settings: Settings, config: HubConfig | None = None, store: Store | None = None
    ) -> Self:
        """Load collections.yaml and open the store (the embedded one locks its folder; `store`:
        one already open); after an unclean shutdown, complete the document replacements it cut
        short."""
        config = config or load_config(settings.config)
        opened = cls(settings, config, store or open_store(settings))
        store = opened.store
        opened.marker = OpenMarker.place(settings.data_dir, store.location, store.embedded)
        if opened.marker.stale:
            try:
                opened.recover()
            except BaseException:
                opened.close()  # releases the embedded store's lock
                raise
        return opened

    def recover(self) -> None:
        """Complete every collection's torn replacements (see rag_api.points.generations); a collection
        that cannot be read now is tried again at the next open."""
        assert self.marker is not None
        started, torn, failed = time.monotonic(), 0, False
        for collection in self.collections.values():
            try:
                torn += len(collection.recover())
            except RagError as exc:
                failed = True
                log.error("%s: not recovered after the crash: %s", collection.name, exc.message)
        if not failed:
            self.marker.recovered()
        log.info(
            "the store was not closed cleanly: %d torn replacements completed in %.2f s",
            torn,
            time.monotonic() - started,
        )

    def collection(self, name: str | None = None, *, enabled_only: bool = True) -> Collection:
        """A configured collection (default_collection when name is None)."""
        name = name or self.config.default_collection
        self.config.collection(name)  # raises CollectionNotFound
        if not allowed(name):  # the request's key may not see it: as if it did not exist
            raise CollectionNotFound(name)
        note_collection(name)  # a configured name: a bounded label for the request's metrics
        collection = self.collections[name]
        if enabled_only and not collection.cfg.enabled:
            raise CollectionDisabled(name)
        return collection

    def visible(self) -> list[str]:
        """The configured collections the request being served may read (all outside a request)."""
        return [name for name in self.collections if allowed(name, "read")]

    def default_visible(self) -> str | None:
        """default_collection, unless the request being served may not read it (then None)."""
        name = self.config.default_collection
        return name if allowed(name, "read") else None

    def describe(self, name: str) -> CollectionSummary:
        """A collection's configuration and its live state in the store (GET /collections, the CLI)."""
        collection = self.collections[name]
        cfg = collection.cfg
        try:
            info, error = collection.info(refresh=True), None
        except StoreUnavailable as exc:  # one unreadable collection does not hide the others
            info, error = None, {"code": exc.code, "message": exc.message}
        llm = cfg.llm
        return CollectionSummary(
            **{
                "name": name,
                "description": cfg.description,
                "enabled": cfg.enabled,
                "language": cfg.language,
                "kb": str(collection.kb_path) if collection.kb_path else None,
                "embedder": cfg.embedder.id,
                "dim": cfg.embedder.dim,
                **{
                    k: v
                    for k, v in self.embedders.where(cfg.embedder).view().items()
                    if k != "query_device"
                },
                "mode": cfg.retrieval.mode,
                "llm": llm.provider
                if llm.provider == "extractive"
                else f"{llm.provider}:{llm.model}",
                "rerank": self.rerankers.describe(cfg.rerank),
                "physical": info.physical if info else None,
                "points": info.points if info else 0,
                "hybrid": bool(info and info.has_sparse),
                **({"error": error} if error else {}),
            }
        )

    def listing(self) -> CollectionList:
        """What GET /collections answers: the collections the request may read, described."""
        rows = [self.describe(name) for name in self.visible()]
        return CollectionList(default_collection=self.default_visible(), collections=rows)

    def load_models(self) -> dict[str, RagError]:
        """Load every enabled collection's embedder (and reranker), check its real dimension,
        and for remote embedders that they answer now.

        Returns the problems (collection -> error) instead of raising for upstream embedders, so
        the API can start and report them on /ready; a wrong `dim` is a configuration error.
        """
        problems: dict[str, RagError] = {}
        for name, collection in self.collections.items():
            if not collection.cfg.enabled:
                continue
            try:
                self.embedders.probe(collection.cfg.embedder, name)
                rerank = collection.cfg.rerank
                if rerank is not None and rerank.enabled and rerank.provider == "local":
                    self.rerankers.get(rerank)
            except RagError as exc:
                if exc.code == "CONFIG_INVALID":
                    raise
                problems[name] = exc
                log.warning("collection %s not ready: %s", name, exc.message)
        return problems

    def close(self) -> None:
        self.fanout.shutdown(wait=False, cancel_futures=True)
        self.store.close()
        if self.marker is not None:
            self.marker.remove()
