"""Reading a kb file into chunks: the format readers (readers.py), jsonl lines, and the splitter."""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_api.config import ChunkingConfig
from rag_api.indexing import ocr
from rag_api.indexing.ocr import OcrOptions
from rag_api.indexing.pdf import IMAGE_SUFFIXES, ScanReader, read_image, read_pdf
from rag_api.indexing.readers import (
    Section,
    UnreadableFile,
    html_sections,
    read_delimited,
    read_docx,
    read_pptx,
    read_xlsx,
)
from rag_api.metadata import MAX_DEPTH, InvalidMetadata, check_metadata, value_problem

# Raising this re-indexes every file: chunk boundaries are part of what a stored chunk is.
# 2: plain text is cut at paragraphs first (an edit used to shift every later chunk boundary).
# 3: a short lead paragraph (a title line) travels with the next one instead of standing alone.
# 4: HTML and DOCX tables kept as rows, PDF cut per page, DOCX in document order.
# 5: a PDF's page furniture chunked apart from its content, its title read from its first page.
# 6: an HTML page's furniture (nav, header, footer, aside, cookie banners) chunked apart too.
CHUNKER_VERSION = 6
# Raising this re-indexes every file too: what BM25 encodes of a chunk and how (rag_api.embedding.bm25).
# 2: k1 0.9 / b 0.5 (were 1.2 / 0.75), the document's title line counted with every chunk.
SPARSE_VERSION = 2
TEXT_SUFFIXES = {".md": "markdown", ".markdown": "markdown", ".txt": "text", ".text": "text"}
SUFFIXES = {
    **TEXT_SUFFIXES,
    ".html": "html",
    ".htm": "html",
    ".jsonl": "jsonl",
    ".pdf": "pdf",
    ".docx": "docx",
    ".csv": "csv",
    ".tsv": "tsv",
    ".xlsx": "xlsx",
    ".pptx": "pptx",
    **dict.fromkeys(IMAGE_SUFFIXES, "image"),
}
OCR_KINDS = {"pdf", "image"}  # what OCR may read: the file's identity includes the OCR setup


@dataclass(slots=True)
class Chunk:
    text: str
    source: str
    chunk_index: int
    metadata: dict[str, Any] = field(default_factory=dict)
    title: str | None = None  # the document's title as its reader found it (else title_line)


@dataclass(slots=True)
class ReadResult:
    chunks: list[Chunk]
    warnings: list[str] = field(default_factory=list)
    facts: Any = None  # text_facts.TextFacts worked out by a reading worker (read_pool)


def read_chunks(
    path: Path,
    source: str,
    chunking: ChunkingConfig,
    ocr_options: OcrOptions | None = None,
    content_only: bool = False,
) -> ReadResult:
    """Read one kb file and chunk it; jsonl lines are chunks already; scanned PDF pages and image
    files are read by OCR as `ocr_options` say (None: not at all); `content_only` leaves an HTML
    page's furniture out. Raises UnreadableFile."""
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise UnreadableFile(f"unsupported file type '{path.suffix}'")
    if kind == "image":  # read by Pillow from the path, never whole into memory here
        data = b""
    else:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise UnreadableFile(exc.strerror or str(exc)) from exc
    if kind == "jsonl":
        return parse_jsonl(decode_text(data), source)
    scans = ScanReader(ocr_options if kind in OCR_KINDS else None)  # others need no Tesseract
    chunks: list[Chunk] = []
    sections = _sections(kind, path, data, chunking.size, scans, content_only)
    title = next((section.title for section in sections if section.title), None)
    for section in sections:
        if section.whole:
            pieces = [section.text]
        else:
            pieces = split_text(section.text, chunking, markdown=section.markdown)
        for piece in pieces:
            chunks.append(Chunk(piece, source, len(chunks), dict(section.metadata), title))
    return ReadResult(chunks, scans.warnings)


def reading_identity(path: Path, ocr_options: OcrOptions | None) -> str:
    """What besides its bytes and the chunking decides a file's text: for the files OCR reads,
    the OCR setup (`ocr`, the language pack, whether Tesseract is installed); "" for others."""
    if SUFFIXES.get(path.suffix.lower()) not in OCR_KINDS:
        return ""
    return ocr.identity(ocr_options or OcrOptions(enabled=False))


def _sections(
    kind: str, path: Path, data: bytes, size: int, scans: ScanReader, content_only: bool
) -> list[Section]:
    """The file's text in sections, by format; tabular readers group rows by the chunk size."""
    if kind == "pdf":
        return read_pdf(path, scans)
    if kind == "image":
        return read_image(path, scans)
    if kind == "docx":
        return read_docx(path)
    if kind == "xlsx":
        return read_xlsx(path, size)
    if kind == "pptx":
        return read_pptx(path)
    text = decode_text(data)
    if kind in ("csv", "tsv"):
        return read_delimited(text, size, tab=kind == "tsv")
    if kind == "html":
        return html_sections(text, furniture=not content_only)
    return [Section(text, markdown=kind == "markdown")]


_CONTROLS = re.compile(
    r"[\x00-\x08\x0b\x0e-\x1f]"
)  # below a space, but tab, newlines and form feed


def decode_text(data: bytes) -> str:
    """UTF-8 (BOM tolerated), else latin-1; binary content is refused."""
    if b"\x00" in data[:8192]:
        raise UnreadableFile("binary content (NUL bytes) in a text file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    sample = text[:8192]
    controls = len(_CONTROLS.findall(sample))
    if controls > len(sample) * 0.05:
        raise UnreadableFile("undecodable bytes: control characters, not UTF-8 or latin-1 text")
    return text


def parse_jsonl(text: str, file_source: str) -> ReadResult:
    """Pre-chunked lines: `text` required; `source`, `chunk_index`; other fields become metadata."""
    result = ReadResult([])
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            result.warnings.append(f"line {number}: invalid JSON ({exc.msg})")
            continue
        except RecursionError:
            result.warnings.append(f"line {number}: nested more than {MAX_DEPTH} levels deep")
            continue
        if problem := value_problem(item):
            result.warnings.append(f"line {number}: {problem[1]}")
            continue
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            result.warnings.append(f"line {number}: expected an object with a string 'text'")
            continue
        if not item["text"].strip():
            result.warnings.append(f"line {number}: empty 'text'")
            continue
        chunk_index = item.get("chunk_index", number - 1)
        if not isinstance(chunk_index, int) or isinstance(chunk_index, bool) or chunk_index < 0:
            result.warnings.append(f"line {number}: chunk_index must be a non-negative integer")
            continue
        source = item.get("source")
        source = source if isinstance(source, str) and source else f"{file_source}#line{number}"
        extra = {k: v for k, v in item.items() if k not in ("text", "source", "chunk_index")}
        metadata = extra.pop("metadata", None)
        metadata = {**extra, **metadata} if isinstance(metadata, dict) else extra
        try:
            check_metadata(metadata)
        except InvalidMetadata as exc:
            result.warnings.append(f"line {number}: metadata {exc}")
            continue
        result.chunks.append(Chunk(item["text"].strip(), source, chunk_index, metadata))
    return result


def split_text(text: str, chunking: ChunkingConfig, markdown: bool = False) -> list[str]:
    """Chunks of at most `size` characters with `overlap`; markdown is cut at headings first and
    plain text at paragraphs, so an edit re-chunks only its own section or paragraphs."""
    text = text.strip()
    if not text:
        return []
    if markdown:
        sections = _markdown_sections(text, chunking.size)
    else:
        sections = _paragraph_groups(text, chunking.size)
    chunks: list[str] = []
    for section in sections:
        if len(section) <= chunking.size:
            chunks.append(section)
        else:  # llama-index is imported only when a piece needs cutting (seconds at start-up)
            splitter = _splitter(chunking.size, chunking.overlap)
            chunks.extend(piece.strip() for piece in splitter.split_text(section))
    return [c for c in chunks if c]


_HEADING = re.compile(r"^#{1,6}\s", re.M)
_BLANK_LINE = re.compile(r"\n\s*\n")
TITLE_CHARS = 200  # a longer first line is a sentence, not a title


def title_line(chunks: list[str]) -> str | None:
    """A document's title: the first paragraph of its first chunk when that is one short line
    (a title line, a markdown heading) followed by more text (in the chunk or the next ones);
    None for a document that starts with its body. BM25 indexes it with every chunk
    (rag_api.embedding.bm25.lexical_text)."""
    if not chunks:
        return None
    lead, _, rest = chunks[0].strip().partition("\n\n")
    lead = lead.strip()
    if "\n" in lead or len(lead) > TITLE_CHARS or not (rest.strip() or len(chunks) > 1):
        return None
    return lead or None


def _tiny(size: int) -> int:
    """Below this many characters a lead (a heading, a title line) is not a chunk of its own."""
    return min(size // 4, 128)


def _paragraph_groups(text: str, size: int) -> list[str]:
    """Consecutive paragraphs packed into groups of at most `size` characters (a longer paragraph
    alone): boundaries fall between paragraphs, so they shift only near an edit. A short lead (a
    title line) is never left alone: it travels with the next paragraph, however long."""
    groups: list[str] = []
    group: list[str] = []
    length = 0
    tiny = _tiny(size)
    for paragraph in (p.strip() for p in _BLANK_LINE.split(text)):
        if not paragraph:
            continue
        if group and length + 2 + len(paragraph) > size and length >= tiny:
            groups.append("\n\n".join(group))
            group, length = [], 0
        length += len(paragraph) + (2 if group else 0)
        group.append(paragraph)
    if group:
        groups.append("\n\n".join(group))
    return groups


_HEADER_LINE = re.compile(r"^(#+)\s(.*)")


def markdown_split(text: str) -> list[str]:
    """The text cut before each heading outside code fences, as llama-index's MarkdownNodeParser
    cuts it (a heading written back as its level's hashes, one space and its text), without
    building its nodes (a fifth of reading a markdown file went there)."""
    sections: list[str] = []
    current = ""
    fenced = False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and (heading := _HEADER_LINE.match(line)):
            if current.strip():
                sections.append(current.strip())
            current = f"{heading.group(1)} {heading.group(2)}\n"
            continue
        current += line + "\n"
    if current.strip():
        sections.append(current.strip())
    return sections


def _markdown_sections(text: str, size: int) -> list[str]:
    sections = markdown_split(text)
    # a heading with (almost) no body of its own travels with the next section
    tiny = _tiny(size)
    merged: list[str] = []
    carry = ""
    for section in sections:
        section = f"{carry}\n\n{section}" if carry else section
        body = _HEADING.sub("", section.split("\n", 1)[-1] if _HEADING.match(section) else section)
        if len(body.strip()) < tiny and len(section) < size:
            carry = section
            continue
        merged.append(section)
        carry = ""
    if carry:
        merged.append(carry)
    return merged


@functools.lru_cache(maxsize=16)
def _splitter(size: int, overlap: int):
    from llama_index.core.node_parser import SentenceSplitter

    # sizes are counted in characters, not model tokens: the splitter takes the len() of what its
    # tokenizer returns, here the text itself
    return SentenceSplitter(chunk_size=size, chunk_overlap=overlap, tokenizer=str)
