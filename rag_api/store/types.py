"""Engine-neutral data types of the store: what goes in, what comes out, how points are selected."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_api import payload
from rag_api.metadata import INT_MAX, INT_MIN

Scalar = str | int | float | bool
DENSE = "dense"
SPARSE = "bm25"


@dataclass(frozen=True, slots=True)
class SparseVec:
    indices: list[int]
    values: list[float]


QueryVector = Sequence[float] | SparseVec  # one side's query: dense (a list) or BM25


@dataclass(frozen=True, slots=True)
class PointData:
    """A point to write: id, dense vector, optional BM25 sparse vector, payload."""

    id: str
    dense: Sequence[float]
    payload: dict[str, Any]
    sparse: SparseVec | None = None


@dataclass(slots=True)
class Record:
    """A stored point as read back (scroll, retrieve)."""

    id: str
    payload: dict[str, Any]
    dense: list[float] | None = None


@dataclass(slots=True)
class Hit:
    """A search result: the fused score plus, where it had one, each side's score and 1-based rank."""

    id: str
    score: float
    payload: dict[str, Any]
    dense_score: float | None = None
    dense_rank: int | None = None
    sparse_score: float | None = None
    sparse_rank: int | None = None
    dense: list[float] | None = None


@dataclass(frozen=True, slots=True)
class Condition:
    """One engine-neutral filter clause; each engine translates these few kinds into its own."""

    kind: str  # any | prefix | equals | range | ids | has_vector
    key: str = ""
    value: Any = None
    gte: float | None = None
    lte: float | None = None
    lt: float | None = None
    negated: bool = False  # goes under must_not


@dataclass(frozen=True, slots=True)
class Selector:
    """Which points an operation applies to; every condition must hold (None = no condition).

    `sources=()` selects nothing at all: an empty allowlist allows no document.
    """

    sources: tuple[str, ...] | None = None
    source_prefix: str | None = None
    metadata: Mapping[str, Scalar] = field(default_factory=dict)
    origin: str | None = None
    files: tuple[str, ...] | None = None  # kb files (payload `file`), any of them
    persist: bool | None = None
    dynamic: bool | None = None  # API chunks: the pipeline's `dynamic` flag
    chunk_index_from: int | None = None
    ids: tuple[str, ...] | None = None
    has_sparse: bool | None = None  # points with (True) or without (False) a BM25 vector
    seq: int | None = None  # the collection-wide chunk number (the admin API's `index`)
    # labels (payload.TYPE, payload.QUALITY): a chunk without them (written before labels, or by
    # another tool) is never left out by these two
    types: tuple[str, ...] | None = None  # the chunk types allowed (None: every type)
    min_quality: float | None = None  # labelled chunks below it are left out (None or 0: none)

    @property
    def selects_nothing(self) -> bool:
        return self.sources == () or self.files == () or self.ids == ()

    @property
    def is_everything(self) -> bool:
        return not self.conditions()

    def conditions(self) -> list[Condition]:
        """The clauses both engines build their filter from (all must hold)."""
        clauses: list[Condition] = []
        if self.sources is not None:
            clauses.append(Condition("any", payload.SOURCE, list(self.sources)))
        if self.source_prefix:
            clauses.append(Condition("prefix", payload.SOURCE, self.source_prefix))
        if self.files is not None:
            clauses.append(Condition("any", payload.FILE, list(self.files)))
        metadata = self.metadata.items()
        clauses += [_equality(payload.metadata_path(key), value) for key, value in metadata]
        flags = (payload.ORIGIN, self.origin), (payload.PERSIST, self.persist)
        for key, value in (*flags, (payload.DYNAMIC, self.dynamic)):
            if value is not None:
                clauses.append(Condition("equals", key, value))
        if self.seq is not None:
            clauses.append(Condition("equals", payload.SEQ, self.seq))
        if self.chunk_index_from is not None:
            clauses.append(Condition("range", payload.CHUNK_INDEX, gte=self.chunk_index_from))
        if self.ids is not None:
            clauses.append(Condition("ids", value=list(self.ids)))
        if self.has_sparse is not None:
            clauses.append(Condition("has_vector", SPARSE, negated=not self.has_sparse))
        return clauses + self._label_conditions()

    def _label_conditions(self) -> list[Condition]:
        """An allowlist of types as "no other known type", a minimum as "not below it": both are
        negated, so a point without labels passes them."""
        clauses = []
        if self.types is not None:
            others = [t for t in payload.CHUNK_TYPES if t not in self.types]
            if others:
                clauses.append(Condition("any", payload.TYPE, others, negated=True))
        if self.min_quality:
            clauses.append(Condition("range", payload.QUALITY, lt=self.min_quality, negated=True))
        return clauses


def _equality(key: str, value: Scalar) -> Condition:
    """A stored 3 matches 3.0; a float that is no 64-bit integer (3.5, or a whole 1e308: the
    engine's match takes 64-bit integers only) can only be matched as a one-point range."""
    if isinstance(value, float) and not (value.is_integer() and INT_MIN <= value <= INT_MAX):
        return Condition("range", key, gte=value, lte=value)
    return Condition("equals", key, int(value) if isinstance(value, float) else value)


@dataclass(frozen=True, slots=True)
class SearchSpec:
    """One search: dense and/or sparse query vectors (both = hybrid: the two sides fused)."""

    limit: int
    dense: Sequence[float] | None = None
    sparse: SparseVec | None = None
    selector: Selector = Selector()
    candidates: int = 50
    fusion: str = "rrf"  # rrf | dbsf
    rrf_k: int = 60
    with_dense: bool = False
    weighting: str = "equal"  # equal | standout | standout_spread (store.fusion.fuse)
    # only these payload fields of each hit (None: all): a search that only ranks its hits, such
    # as source evidence over every candidate, reads the rest of the few it keeps afterwards
    fields: Sequence[str] | None = None
    # DBSF over complete scores: a candidate one side did not list gets that side's real score
    # (store.fusion.complete_part) instead of none
    complete: bool = False

    @property
    def completes(self) -> bool:
        """Whether the hybrid fusion scores each candidate on both sides (DBSF only: RRF fuses
        ranks, and a candidate outside a side's list has none)."""
        return self.complete and self.fusion == "dbsf"


@dataclass(frozen=True, slots=True)
class PageSpec:
    """One page of a scroll: which points, how many, after which id, and what of each to read
    (the stored dense vector; only these payload fields, or all of them)."""

    selector: Selector
    limit: int
    offset: str | None
    with_dense: bool
    fields: Sequence[str] | None


@dataclass(frozen=True, slots=True)
class CollectionInfo:
    """What the engine knows of one collection: its physical name, dense size, sparse support, points."""

    name: str
    physical: str
    dim: int
    points: int
    dense_name: str = DENSE
    sparse_name: str | None = SPARSE

    @property
    def has_sparse(self) -> bool:
        return self.sparse_name is not None


@dataclass(frozen=True, slots=True)
class Layout:
    """How a server spreads a new collection (shards, replicas); the embedded engine has one shard."""

    shard_number: int | None = None
    replication_factor: int | None = None


@dataclass(frozen=True, slots=True)
class Rebuilt:
    """What rebuilding an unreadable collection kept and dropped (Store.rebuild)."""

    kept: int  # points copied into the new collection
    dropped: tuple[str, ...]  # ids of the points that could not be read back
    replayed: bool  # False: the write-ahead log was replayed only up to its unreadable entry
    old_copy: str  # where the old data was moved
