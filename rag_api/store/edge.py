"""The embedded engine: qdrant-edge shards on disk, one per physical collection, owned by one process."""

from __future__ import annotations

import errno
import logging
import os
import shutil
import threading
from collections.abc import Mapping, Sequence
from contextlib import ExitStack, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from rag_api.errors import InsufficientStorage, StoreUnavailable
from rag_api.store.aliases import AliasFile
from rag_api.store.base import (
    PAYLOAD_INDEXES,
    Hold,
    Store,
    engine_ids,
    point_vectors,
    unlinked,
)
from rag_api.store.diskspace import (
    INDEX_BYTES,
    MB,
    NEW_SHARD_BYTES,
    SMALL_WRITE,
    DiskSpace,
    allocated_bytes,
    points_bytes,
)
from rag_api.store.edge_failures import engine_call
from rag_api.store.edge_optimize import INDEXED_FROM_BYTES, WORK, build_index, exchange, replay
from rag_api.store.edge_requests import (
    KIND,
    SCHEMA,
    among,
    dense_params,
    dense_query,
    keyed_scores,
    payload_selector,
    point_key,
    search_params,
    selector_filter,
    sparse_query,
    sparse_vector,
    str_id,
)
from rag_api.store.edge_shards import Journal, Shards
from rag_api.store.fusion import Missing, fuse, one_sided
from rag_api.store.process_lock import acquire_process_lock
from rag_api.store.records import ExportPage, dense_of, hit_from, record_from
from rag_api.store.salvage import rebuild_shard
from rag_api.store.search_plan import annotate
from rag_api.store.shard_copy import copy_aside
from rag_api.store.types import (
    DENSE,
    SPARSE,
    CollectionInfo,
    Hit,
    Layout,
    PageSpec,
    PointData,
    QueryVector,
    Rebuilt,
    Record,
    SearchSpec,
    Selector,
    SparseVec,
)

log = logging.getLogger(__name__)


class EdgeStore(Store):
    """qdrant-edge-py shards under `root`, plus the hub's own alias file."""

    embedded = True

    def __init__(self, root: Path, min_free_mb: int = 0, nice: int = 0) -> None:
        self.root = Path(root)
        self.location = str(self.root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.disk = DiskSpace(self.root, min_free_mb * MB)
        self.nice = nice  # levels down for an index built aside
        self._lock_file = acquire_process_lock(self.root / ".lock")
        shutil.rmtree(self.root / WORK, ignore_errors=True)  # an index build a stop cut short
        self._aliases = AliasFile(self.root / "aliases.json")
        self.shards = Shards(self.root, self.disk)
        self._building = threading.Lock()  # one index built aside at a time

    # --- collections and aliases -------------------------------------------------------------

    def alias_target(self, name: str) -> str | None:
        physical = self._aliases.read().get(name)
        if physical is not None:
            return physical
        return name if self.shards.folder(name).is_dir() else None

    def aliases(self) -> dict[str, str]:
        return self._aliases.read()

    def physical_collections(self) -> list[str]:
        return self.shards.names()

    def physical_info(self, physical: str) -> CollectionInfo:
        config = self.shards.config(physical)
        vectors = config.get("vectors") or {}
        dense_name = DENSE if DENSE in vectors else next(iter(vectors), DENSE)
        sparse = config.get("sparse_vectors") or {}
        sparse_name = SPARSE if SPARSE in sparse else None
        return CollectionInfo(
            name=physical,
            physical=physical,
            dim=int(vectors.get(dense_name, {}).get("size", 0)),
            points=self.shards.call(physical, "info").points_count,
            dense_name=dense_name,
            sparse_name=sparse_name,
        )

    def create_physical(self, physical: str, dim: int, layout: Layout = Layout()) -> None:
        config = qe.EdgeConfig(
            vectors={DENSE: dense_params(dim)},
            sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        )
        need = NEW_SHARD_BYTES + len(PAYLOAD_INDEXES) * INDEX_BYTES
        self.disk.require(need, f"create collection '{physical}'")
        with self.shards.guard:
            self.shards.create(physical, config)
            for field, kind in PAYLOAD_INDEXES.items():
                self.create_payload_index(physical, field, kind)

    def drop_physical(self, physical: str) -> None:
        self.shards.drop(physical)

    def set_alias(self, name: str, physical: str) -> None:
        self.disk.require(SMALL_WRITE, f"point '{name}' at '{physical}'")
        with self.shards.guard:
            moved_from = self._aliases.read().get(name)
            self._aliases.set(name, physical)
            if moved_from not in (None, physical):  # a migration or a restore: build no more
                self.shards.cancel(moved_from, f"'{name}' moved to '{physical}' meanwhile")

    def remove_alias(self, name: str) -> None:
        self.disk.require(SMALL_WRITE, f"remove the alias '{name}'")
        with self.shards.guard:
            self._aliases.remove(name)

    def payload_indexes(self, physical: str) -> dict[str, str]:
        schema = self.shards.call(physical, "info").payload_schema
        return {field: KIND.get(index.data_type, "other") for field, index in schema.items()}

    def create_payload_index(self, physical: str, field: str, kind: str) -> None:
        points = self.shards.call(physical, "info").points_count
        self.disk.require(INDEX_BYTES + 64 * points, f"index '{field}' of '{physical}'")
        params = unlinked(field, kind)
        schema = SCHEMA[kind] if params is None else qe.IntegerIndexParams(**params)
        operation = qe.UpdateOperation.create_field_index(field, schema)
        self.shards.call(physical, "update", operation)

    # --- points ------------------------------------------------------------------------------

    def _upsert(self, physical: str, points: Sequence[PointData]) -> None:
        self.disk.require(points_bytes(points), f"write {len(points)} chunks to '{physical}'")
        edge_points = [qe.Point(p.id, point_vectors(p, sparse_vector), p.payload) for p in points]
        # one operation: one WAL record
        self.shards.call(physical, "update", qe.UpdateOperation.upsert_points(edge_points))

    def _delete_ids(self, physical: str, ids: Sequence[str]) -> None:
        self.disk.require(SMALL_WRITE, f"delete from '{physical}'")
        self.shards.call(physical, "update", qe.UpdateOperation.delete_points(list(ids)))

    def _delete_where(self, physical: str, selector: Selector) -> None:
        self.disk.require(SMALL_WRITE, f"delete from '{physical}'")
        operation = qe.UpdateOperation.delete_points_by_filter(selector_filter(selector))
        self.shards.call(physical, "update", operation)

    def _set_payload(self, physical: str, ids: Sequence[str], fields: Mapping[str, Any]) -> None:
        self.disk.require(SMALL_WRITE, f"label chunks of '{physical}'")
        present = [r.id for r in self._retrieve(physical, ids, with_dense=False)]
        if present:  # the engine refuses an id it does not have
            operation = qe.UpdateOperation.set_payload(engine_ids(present), dict(fields))
            self.shards.call(physical, "update", operation)

    def _retrieve(self, physical: str, ids: Sequence[str], with_dense: bool) -> list[Record]:
        with_vector = [self.physical_info(physical).dense_name] if with_dense else False
        records = self.shards.call(physical, "retrieve", engine_ids(ids), True, with_vector)
        return [record_from(r, with_dense) for r in records]

    def _scroll(self, physical: str, page: PageSpec) -> tuple[list[Record], str | None]:
        request = qe.ScrollRequest(
            offset=page.offset,
            limit=page.limit,
            filter=selector_filter(page.selector),
            with_payload=payload_selector(page.fields),
            with_vector=[self.physical_info(physical).dense_name] if page.with_dense else False,
        )
        records, next_offset = self.shards.call(physical, "scroll", request)
        return [record_from(r, page.with_dense) for r in records], str_id(next_offset)

    def _export(
        self, physical: str, limit: int, offset: str | None
    ) -> tuple[ExportPage, str | None]:
        request = qe.ScrollRequest(offset=offset, limit=limit, with_payload=True, with_vector=True)
        records, next_offset = self.shards.call(physical, "scroll", request)
        dense_name = self.physical_info(physical).dense_name
        return ExportPage(records, dense_name), str_id(next_offset)

    def _count(self, physical: str, selector: Selector) -> int:
        request = qe.CountRequest(exact=True, filter=selector_filter(selector))
        return self.shards.kept(
            physical,
            ("count", repr(selector)),
            lambda: self.shards.call(physical, "count", request),
        )

    def _facet(
        self, physical: str, key: str, selector: Selector, limit: int
    ) -> list[tuple[str, int]]:
        """The engine's exact counts, kept until the shard changes (`Shards.kept`): one call
        holds the interpreter ~35 µs a distinct value (3,000 sources: ~0.1 s), and a status
        poll would stall every request that long each time (docs/performance.md)."""
        request = qe.FacetRequest(
            key=key, limit=limit, exact=True, filter=selector_filter(selector)
        )

        def facet() -> tuple[tuple[str, int], ...]:
            return tuple(
                (str(h.value), h.count) for h in self.shards.call(physical, "facet", request)
            )

        return list(self.shards.kept(physical, ("facet", key, limit, repr(selector)), facet))

    def _nearest(
        self, physical: str, query: QueryVector, spec: SearchSpec, info: CollectionInfo
    ) -> list[Hit]:
        dense = not isinstance(query, SparseVec)
        request = qe.QueryRequest(
            limit=spec.limit,
            query=dense_query(query, info) if dense else sparse_query(query, info),
            filter=selector_filter(spec.selector),
            params=search_params(info, spec.limit) if dense else None,
            with_payload=payload_selector(spec.fields),
            with_vector=[info.dense_name] if spec.with_dense else False,
        )
        points = self.shards.call(physical, "query", request)
        return [hit_from(p, spec.with_dense) for p in points]

    def _hybrid(self, physical: str, spec: SearchSpec, info: CollectionInfo) -> list[Hit]:
        assert spec.dense is not None and spec.sparse is not None
        flt, side = selector_filter(spec.selector), spec.candidates
        dense_q, sparse_q = dense_query(spec.dense, info), sparse_query(spec.sparse, info)
        # the two sides only, without payloads; fused here (rag_api.store.fusion)
        batch = qe.QueryBatchRequest(
            [
                qe.QueryRequest(
                    limit=side, query=dense_q, filter=flt, params=search_params(info, side)
                ),
                qe.QueryRequest(limit=side, query=sparse_q, filter=flt),
            ]
        )
        dense_pts, sparse_pts = self.shards.call(physical, "query_batch", batch)
        ids: dict[int, Any] = {}  # every candidate's engine id by its key (keyed_scores)
        dense, sparse = keyed_scores(dense_pts, ids), keyed_scores(sparse_pts, ids)
        missing = None
        if spec.completes:
            missing = self._missing(physical, dense_q, sparse_q, dense, sparse, ids)
        top = fuse(dense, sparse, spec.fusion, spec.rrf_k, spec.weighting, missing)[: spec.limit]
        with_vector = [info.dense_name] if spec.with_dense else False  # for MMR
        wanted, payloads = [ids[key] for key, _ in top], payload_selector(spec.fields)
        records = self.shards.call(physical, "retrieve", wanted, payloads, with_vector)
        found = {point_key(record.id): record for record in records}
        in_dense = {key for key, _ in dense}
        known = missing.cosines if missing is not None else {}
        outside = [ids[key] for key in found if key not in in_dense and key not in known]
        cosines = {**known, **self._cosines(physical, dense_q, outside)}
        kept = [(key, score) for key, score in top if key in found]  # a deleted point is gone
        hits = [
            Hit(
                str(ids[key]),
                score,
                found[key].payload or {},
                dense_score=cosines.get(key),
                dense=dense_of(found[key].vector),
            )
            for key, score in kept
        ]
        keys = {hit.id: key for hit, (key, _) in zip(hits, kept, strict=True)}
        return annotate(hits, dense, sparse, spec.dense, keys.__getitem__)

    def _missing(
        self,
        physical: str,
        dense_q: Any,
        sparse_q: Any,
        dense: list[tuple[int, float]],
        sparse: list[tuple[int, float]],
        ids: dict[int, Any],
    ) -> Missing:
        """Each side's score of the best candidates only the other side listed, in one batch: the
        exact cosine of BM25-only ones, the BM25 score of dense-only ones (a sparse query over
        those points alone, which does not return a point that shares no term: 0)."""
        bm25_only, dense_only = one_sided(sparse, dense), one_sided(dense, sparse)
        requests = [
            among(query, [ids[key] for key in keys], exact=query is dense_q)
            for query, keys in ((dense_q, bm25_only), (sparse_q, dense_only))
            if keys
        ]
        if not requests:
            return Missing()
        answers = iter(self.shards.call(physical, "query_batch", qe.QueryBatchRequest(requests)))
        cosines = dict(keyed_scores(next(answers), ids)) if bm25_only else {}
        bm25 = dict.fromkeys(dense_only, 0.0) | dict(
            keyed_scores(next(answers), ids) if dense_only else []
        )
        return Missing(cosines, bm25)

    def _cosines(self, physical: str, query: Any, ids: list[Any]) -> dict[int, float]:
        """The engine's cosine of the query with each of these points (engine ids; by key): an
        exact search over them alone, so no stored vector is read into Python (100 vectors cost
        more than the search)."""
        if not ids:
            return {}
        return dict(keyed_scores(self.shards.call(physical, "query", among(query, ids, True)), {}))

    def optimize(self, physical: str, hold: Hold = nullcontext) -> None:
        """Build the shard's search index on a copy in a child process and swap it in
        (rag_api.store.edge_optimize): searches go on meanwhile, and writes too, paused only
        while the shard is copied; those made during the build are replayed onto the copy before
        it takes the shard's place. A drop or a migration meanwhile cancels the build. A shard too
        small to be indexed is optimized in place, and so is one without room for the copy or a
        folder exchange: every request waits for the engine meanwhile. One build at a time."""
        with self._building:
            folder = self.shards.folder(physical)
            # an optimization may rewrite the shard's data into a new segment beside the old one
            need = allocated_bytes(folder) + NEW_SHARD_BYTES
            self.disk.require(need, f"optimize '{physical}'")
            info = self.physical_info(physical)
            if info.points * info.dim * 4 < INDEXED_FROM_BYTES:  # milliseconds: not worth a copy
                with hold():
                    self.shards.call(physical, "optimize")
                return
            work = self.root / WORK / _stamp()
            with ExitStack() as journalled:
                try:
                    with hold(), self.shards.writes_paused(physical):
                        journal = journalled.enter_context(self.shards.journalled(physical))
                        self.shards.call(physical, "flush")
                        copy_aside(folder, work / physical, need + self.disk.min_free)
                    build_index(work / physical, self.nice, journal.cancelled)
                    self._replace(physical, work / physical, journal, hold)
                except OSError as exc:
                    if journal.cancelled.is_set():
                        log.warning(
                            "%s: the index build aside is given up (%s)", physical, journal.reason
                        )
                        return
                    log.warning(
                        "%s: the index is built in place (%s)", physical, exc.strerror or exc
                    )
                    with hold():
                        self.shards.call(physical, "optimize")
                finally:
                    shutil.rmtree(work, ignore_errors=True)

    def _replace(self, physical: str, built: Path, journal: Journal, hold: Hold) -> None:
        """Replay the journal's writes onto the shard copy `built`, the bulk of them while writes
        go on, the last ones with every call held; then put the copy in `physical`'s place."""
        shard = None
        try:
            shard = engine_call(qe.EdgeShard.load, str(built))
            replayed = engine_call(replay, shard, journal, 0)
            with hold(), self.shards.guard:
                engine_call(replay, shard, journal, replayed)
                engine_call(shard.flush)
                shard.close()
                shard = None
                if journal.cancelled.is_set():
                    raise OSError(errno.ECANCELED, "cancelled", str(built))
                self._swap(physical, built)
        except StoreUnavailable as exc:
            raise OSError(errno.EIO, f"replaying the writes made meanwhile: {exc}") from exc
        finally:
            if shard is not None:
                shard.close()

    def _swap(self, physical: str, built: Path) -> None:
        """Put the shard folder `built` in place of `physical`'s (the old one goes to `built`)."""
        with self.shards.closed(physical) as folder:
            exchange(folder, built)
        try:
            self.shards.call(physical, "info")  # it opens
        except StoreUnavailable as exc:  # the old shard comes back
            with self.shards.closed(physical) as folder:
                exchange(folder, built)
            raise OSError(errno.EIO, f"the built index does not open: {exc}") from exc

    def copy_physical(self, physical: str, to: Path) -> None:
        """Flush the shard and copy its folder to `to`, a shard another process can open (a
        backup reads it there). The caller holds the collection's writes until it returns."""
        self.shards.call(physical, "flush")
        try:
            copy_aside(self.shards.folder(physical), to, self.disk.min_free)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise InsufficientStorage(
                    f"not enough free disk space to copy '{physical}' for a backup: "
                    f"{exc.strerror}; free some space (reads and writes go on)"
                ) from exc
            raise StoreUnavailable("embedded Qdrant", f"copying '{physical}': {exc}") from exc

    def rebuild(self, physical: str) -> Rebuilt:
        """Replace a shard that holds unreadable data with one of everything still readable
        (rag_api.store.salvage); the old folder is kept under .quarantine/ for forensics."""
        folder = self.shards.folder(physical)
        # the readable points go into a new shard beside the old one
        self.disk.require(allocated_bytes(folder) + NEW_SHARD_BYTES, f"rebuild '{physical}'")
        work = self.root / ".quarantine" / f"{physical}-{_stamp()}"
        with self.shards.closed(physical):
            rebuilt, kept, dropped, replayed = engine_call(rebuild_shard, folder, work / "work")
            os.rename(folder, work / physical)
            os.rename(rebuilt, folder)
            shutil.rmtree(work / "work", ignore_errors=True)
        return Rebuilt(kept, tuple(dropped), replayed, str(work / physical))

    def close(self) -> None:
        with self.shards.guard:
            self.shards.close()
            if self._lock_file is not None:
                self._lock_file.close()
                self._lock_file = None


def _stamp() -> str:
    """A work folder's name: now, to the microsecond."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
