"""A source's document -> chunks, through the kb folder's readers (by its suffix, OCR as the
collection says), and the identity of what they make of it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rag_api.indexing import kb
from rag_api.indexing.chunking import SUFFIXES, Chunk, UnreadableFile, read_chunks, reading_identity
from rag_api.indexing.sync import ocr_options
from rag_api.points.collection import Collection
from rag_api.sources.base import Document

CONTENT_ONLY = "content-only"  # in a page's identity: read without its furniture


@dataclass
class Read:
    chunks: list[Chunk]
    doc_hash: str  # its bytes, the chunking and the reading (kb.doc_hash)
    warnings: list[str]


def read_document(collection: Collection, name: str, document: Document, scratch: Path) -> Read:
    """The document's chunks, named `name` (`source:key`); UnreadableFile as for a kb file. Its
    bytes go through a file in `scratch`, where the readers of PDFs and office files read them."""
    suffix = document.suffix.lower()
    if suffix not in SUFFIXES:
        raise UnreadableFile(f"unsupported file type '{suffix}'")
    path = scratch / f"document{suffix}"
    path.write_bytes(document.data)
    try:
        options = ocr_options(collection)
        result = read_chunks(
            path, name, collection.cfg.chunking, options, content_only=document.content_only
        )
        reading = reading_identity(path, options)
    finally:
        path.unlink(missing_ok=True)
    if document.content_only:
        reading = f"{reading}+{CONTENT_ONLY}" if reading else CONTENT_ONLY
    if document.title:
        for chunk in result.chunks:
            chunk.title = document.title
    doc_hash = kb.doc_hash(document.data, collection.cfg.chunking, reading)
    return Read(result.chunks, doc_hash, result.warnings)
