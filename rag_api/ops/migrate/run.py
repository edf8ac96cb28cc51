"""`rag-hub migrate`: move a collection to another embedding model with no downtime; writes during
a migration: docs/operations.md, "Moving a collection to another embedding model"."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

from pydantic import ConfigDict

from rag_api.catalog import Catalog
from rag_api.config import EmbedderConfig
from rag_api.embedding.dims import offline_problem
from rag_api.errors import (
    InvalidRequest,
    MigrationFailed,
    MigrationInProgress,
    NoPreviousCollection,
)
from rag_api.ops.migrate.copy import CopyStats, copy_points, fingerprints
from rag_api.ops.migrate.verify import top5_overlap
from rag_api.ops.migrate.versions import EmbedderHistory, versions
from rag_api.points.collection import Collection
from rag_api.schema import Body
from rag_api.store import Layout, physical_name, version_of

log = logging.getLogger("rag_api.ops.migrate.run")
MAX_PASSES = 3  # copy passes before the final catch-up under the write gate
Progress = Callable[[str, int, int], None]  # (phase, done, total)


@dataclass
class MigrationPlan:
    collection: str
    live: str | None  # physical collection behind the alias now
    target: str | None  # physical collection that will be live afterwards
    points: int
    old_embedder: str
    old_dim: int
    new_embedder: dict[str, Any]
    migrated: int = 0  # points the target already holds (a resumed or repeated migration)
    discard: str | None = None  # why an existing target is dropped and rebuilt first
    rollback: bool = False
    noop: str | None = None  # why there is nothing to move (only the configuration changes)

    @property
    def embedder(self) -> EmbedderConfig:
        return EmbedderConfig.model_validate(self.new_embedder)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class MigrationResult:
    collection: str
    live: str | None
    previous: str | None
    embedder: dict[str, Any]
    points: int = 0
    embedded: int = 0
    unchanged: int = 0
    deleted: int = 0
    passes: int = 0
    top5_overlap: float | None = None
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def plan_migration(hub: Catalog, name: str, new: EmbedderConfig) -> MigrationPlan:
    """What `migrate` would do: live and target collections, chunk count, old and new model."""
    problem = offline_problem(new)  # `config check` says the same of collections.yaml
    if problem is not None:
        raise InvalidRequest(f"cannot migrate '{name}': {problem}", param="embedder")
    collection = hub.collection(name, enabled_only=False)
    store = collection.store
    info = collection.info(refresh=True)
    new_dump = new.model_dump(exclude_defaults=True)
    if info is None:
        return MigrationPlan(
            name, None, None, 0, collection.embedder_id, collection.cfg.embedder.dim, new_dump,
            noop="nothing is stored yet: only collections.yaml changes",
        )  # fmt: skip
    stored = collection.stored_embedder(info) or collection.embedder_id
    plan = MigrationPlan(name, info.physical, None, info.points, stored, info.dim, new_dump)
    if stored == new.id and info.dim == new.dim:
        plan.noop = f"{info.physical} already holds {new.id} vectors ({new.dim}d)"
        return plan
    all_versions = versions(store, name)
    newer = [p for p in all_versions if version_of(p) > version_of(info.physical)]
    if newer:
        plan.target = newer[-1]
        held = store.physical_info(plan.target)
        held_by = collection.stored_embedder(held)
        if held.dim != new.dim or held_by not in (None, new.id):
            plan.discard = f"{plan.target} holds {held_by} ({held.dim}d) from an earlier attempt"
        else:
            plan.migrated = held.points
    else:
        top = max([version_of(info.physical), *map(version_of, all_versions)])
        plan.target = physical_name(name, top + 1)
    return plan


class MigrateBody(Body):
    """A migration to `embedder`, or with `rollback` back to the previous collection: what the
    CLI sends and /v1/ops/migrate takes."""

    model_config = ConfigDict(extra="forbid")

    collection: str
    embedder: EmbedderConfig | None = None
    rollback: bool = False

    def plan(self, hub: Catalog) -> MigrationPlan:
        return plan_request(hub, self.collection, self.embedder, self.rollback)


def plan_request(
    hub: Catalog, name: str, embedder: EmbedderConfig | None, rollback: bool
) -> MigrationPlan:
    """The plan of a migration to `embedder`, or of a rollback."""
    if rollback:
        return plan_rollback(hub, name)
    if embedder is None:
        raise InvalidRequest("give an embedder, or rollback: true", param="embedder")
    return plan_migration(hub, name, embedder)


def plan_rollback(hub: Catalog, name: str) -> MigrationPlan:
    """A migration back to the collection the live one replaced, with the embedder it had."""
    collection = hub.collection(name, enabled_only=False)
    info = collection.info(refresh=True)
    older = [
        p
        for p in versions(collection.store, name)
        if info is not None and version_of(p) < version_of(info.physical)
    ]
    if info is None or not older:
        raise NoPreviousCollection(
            f"collection '{name}' has no previous collection to roll back to"
        )
    target = older[-1]
    held = collection.store.physical_info(target)
    embedder = EmbedderHistory(hub.settings.data_dir, name).get(target)
    if embedder is None:  # migrated by an older tool: the model id and size are in the store
        provider, _, model = (collection.stored_embedder(held) or "").partition(":")
        if not model:
            raise NoPreviousCollection(f"cannot tell which embedding model built {target}")
        embedder = EmbedderConfig(provider=provider, model=model, dim=held.dim)  # type: ignore[arg-type]
    return MigrationPlan(
        name, info.physical, target, info.points, collection.stored_embedder(info) or "",
        info.dim, embedder.model_dump(exclude_defaults=True), migrated=held.points, rollback=True,
    )  # fmt: skip


def run_migration(
    hub: Catalog,
    plan: MigrationPlan,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    claim: ExitStack | None = None,
) -> MigrationResult:
    """Carry out a plan; the alias and the embedder switch only after the copy is verified.
    `claim` holds the caller's exclusive() of the collection: released when this returns."""
    started = time.monotonic()
    name, new = plan.collection, plan.embedder
    with claim or exclusive(hub, name):
        collection = hub.collection(name, enabled_only=False)
        result = MigrationResult(name, plan.live, None, plan.new_embedder)
        if plan.noop is not None or plan.target is None:
            switch_embedder(hub, collection, new, None)
            result.notes.append(plan.noop or "nothing to move")
            return result
        hub.embedders.check_dimension(new, name)
        target = Collection(name, collection.cfg.model_copy(update={"embedder": new}), None,
                            collection.store, hub.embedders, hub.rerankers)  # fmt: skip
        _prepare_target(collection, plan)
        known = fingerprints(target, plan.target)  # kept current by every pass: read once
        stats = _copy_pass(collection, target, plan, result, known, progress, cancel)
        while stats.changes and result.passes < MAX_PASSES:
            stats = _copy_pass(collection, target, plan, result, known, progress, cancel)
        if result.embedded:
            collection.store.optimize(plan.target)  # index what the bulk load wrote
        result.top5_overlap = top5_overlap(collection.store, plan.live, plan.target)
        with collection.writes_held():  # in-process writers wait from here to the swap
            info = collection.info(refresh=True)
            if info is None or info.physical != plan.live:
                raise MigrationFailed(f"the alias of '{name}' moved during the migration")
            _copy_pass(collection, target, plan, result, known, progress, None, "final catch-up")
            _verify(collection, plan)
            result.previous = plan.live
            _record(hub, collection, plan)
            switch_embedder(hub, collection, new, plan.target)
        result.live = plan.target
        result.points = collection.store.count(plan.target)
        result.seconds = round(time.monotonic() - started, 3)
        log.info("%s: now on %s (%s), previous %s kept", name, plan.target, new.id, plan.live)
        return result


def switch_embedder(
    hub: Catalog, collection: Collection, new: EmbedderConfig, physical: str | None
) -> None:
    """Point the alias at `physical` and the collection at `new` together (searches wait)."""
    cfg = collection.cfg.model_copy(update={"embedder": new})
    collection.switch(cfg, physical)
    hub.config = hub.config.model_copy(
        update={"collections": {**hub.config.collections, collection.name: cfg}}
    )


def drop_old(hub: Catalog, name: str) -> list[str]:
    """Delete every physical collection of `name` but the live one; returns their names."""
    collection = hub.collection(name, enabled_only=False)
    with exclusive(hub, name):
        info = collection.info(refresh=True)
        if info is None:
            return []
        dropped = [p for p in versions(collection.store, name) if p != info.physical]
        for physical in dropped:
            collection.store.drop_physical(physical)
            log.info("%s: dropped %s", name, physical)
    return dropped


@contextmanager
def exclusive(hub: Catalog, name: str) -> Iterator[None]:
    """One migration (or drop) per collection at a time in this hub (its claims, `hub.jobs`)."""
    refusal = partial(MigrationInProgress, f"a migration of '{name}' is already running")
    with hub.jobs.claims.hold(f"migrate:{name}", refusal):
        yield


def migrating(hub: Catalog, name: str) -> bool:
    """Whether a migration (or a drop of old versions) of `name` runs in this hub now."""
    return hub.jobs.claims.held(f"migrate:{name}")


def _prepare_target(collection: Collection, plan: MigrationPlan) -> None:
    assert plan.target is not None
    store = collection.store
    if plan.discard:
        log.warning("%s: discarding %s", collection.name, plan.discard)
        store.drop_physical(plan.target)
    if plan.target not in store.physical_collections():
        qdrant = collection.cfg.qdrant
        layout = Layout(qdrant.shard_number, qdrant.replication_factor)
        store.create_physical(plan.target, plan.embedder.dim, layout)


def _copy_pass(
    collection: Collection,
    target: Collection,
    plan: MigrationPlan,
    result: MigrationResult,
    known: dict[str, str],
    progress: Progress | None,
    cancel: threading.Event | None,
    phase: str | None = None,
) -> CopyStats:
    assert plan.live is not None and plan.target is not None
    result.passes += 1
    phase = phase or ("copy" if result.passes == 1 else f"catch-up {result.passes - 1}")
    report = (lambda done, total: progress(phase, done, total)) if progress else None
    stats = copy_points(plan.live, target, plan.target, report, cancel, known)
    log.info("%s: %s: %s", collection.name, phase, stats)
    result.embedded += stats.embedded
    result.deleted += stats.deleted
    if result.passes == 1:
        result.unchanged = stats.unchanged  # already migrated by an earlier, interrupted run
    return stats


def _verify(collection: Collection, plan: MigrationPlan) -> None:
    assert plan.live is not None and plan.target is not None
    store = collection.store
    old, new = store.sources(plan.live), store.sources(plan.target)
    if store.count(plan.live) != store.count(plan.target) or old != new:
        differ = sorted(s for s in set(old) | set(new) if old.get(s) != new.get(s))
        raise MigrationFailed(
            f"{plan.target} does not match {plan.live} (sources differ: {', '.join(differ[:5])}); "
            "the alias was not moved: run the migration again"
        )


def _record(hub: Catalog, collection: Collection, plan: MigrationPlan) -> None:
    assert plan.live is not None and plan.target is not None
    history = EmbedderHistory(hub.settings.data_dir, collection.name)
    if history.get(plan.live) is None and plan.old_embedder == collection.embedder_id:
        history.record(plan.live, collection.cfg.embedder)
    history.record(plan.target, plan.embedder)
