"""Readers and the splitter: md by headings, sizes in characters, html text, jsonl lines, bad files."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from rag_api.config import ChunkingConfig
from rag_api.indexing.chunking import (
    UnreadableFile,
    markdown_split,
    parse_jsonl,
    read_chunks,
    split_text,
)
from rag_api.indexing.kb import doc_hash, ignore_reason, scan
from rag_api.indexing.readers import html_to_text

SMALL = ChunkingConfig(size=200, overlap=20)


def sentences(n: int, word: str) -> str:
    return " ".join(f"{word.capitalize()} sentence number {i} has a few words." for i in range(n))


def test_markdown_is_cut_at_headings_first() -> None:
    text = f"# Title\n\n## Refunds\n\n{sentences(2, 'refund')}\n\n## Vacation\n\n{sentences(2, 'vacation')}"
    chunks = split_text(text, SMALL, markdown=True)
    assert len(chunks) == 2
    assert chunks[0].startswith("# Title\n\n## Refunds") and "vacation" not in chunks[0].lower()
    assert chunks[1].startswith("## Vacation")


@pytest.mark.slow
def test_long_sections_are_split_within_size() -> None:
    text = "## Long\n\n" + sentences(30, "alpha")
    chunks = split_text(text, SMALL, markdown=True)
    assert len(chunks) > 5 and all(len(c) <= SMALL.size for c in chunks)


def repeated(before: str, after: str) -> str:
    """The longest end of `before` that `after` starts with: what a neighbour carries over."""
    for length in range(min(len(before), len(after)), 0, -1):
        if after.startswith(before[-length:]):
            return before[-length:]
    return ""


@pytest.mark.slow
def test_neighbouring_chunks_repeat_real_text_up_to_the_overlap() -> None:
    """Sentences shorter than the overlap (17 characters, overlap 40): the splitter carries whole
    sentences into the next chunk, at least one and never more characters than the overlap.
    Every sentence is unique, so a repeat is text the splitter carried, not a shared word."""
    overlap = ChunkingConfig(size=200, overlap=40)
    text = "## Long\n\n" + " ".join(f"Item {n:02d} is here." for n in range(60))
    chunks = split_text(text, overlap, markdown=True)
    assert len(chunks) >= 5 and all(len(c) <= overlap.size for c in chunks)
    for before, after in zip(chunks, chunks[1:], strict=False):
        carried = repeated(before, after)
        assert re.fullmatch(r"Item \d\d is here\.( Item \d\d is here\.)*", carried), (before, after)
        assert len(carried) <= overlap.overlap, (carried, overlap.overlap)


@pytest.mark.slow
def test_an_edit_rechunks_only_its_section() -> None:
    sections = [f"## Section {i}\n\n{sentences(6, f'topic{i}')}" for i in range(8)]
    before = split_text("\n\n".join(sections), SMALL, markdown=True)
    sections[3] = sections[3].replace("number 2", "number two, edited")
    after = split_text("\n\n".join(sections), SMALL, markdown=True)
    changed = set(after) - set(before)
    assert 1 <= len(changed) <= 3 and len(after) == len(before)


def test_html_keeps_visible_text_only() -> None:
    html = """<html><head><title>T</title><style>body{font-family:x}</style></head>
    <body><h1>Security</h1><p>Data is encrypted with AES-256 &amp; TLS&nbsp;1.3.</p>
    <script>function highlightSection(){}</script><ul><li>One</li><li>Two</li></ul></body></html>"""
    text = html_to_text(html)
    assert "# Security" in text and "AES-256 & TLS\xa01.3" in text.replace(" 1.3", "\xa01.3")
    assert "highlightSection" not in text and "font-family" not in text
    assert "* One\n* Two" in text


def test_jsonl_lines_defaults_metadata_and_bad_lines() -> None:
    text = "\n".join(
        [
            '{"text": "Horario soporte lun-vier 09 a 18h", "source": "faq_horarios", "chunk_index": 0, "metadata": {"categoria": "soporte"}, "pagina": 12}',
            "{broken",
            '{"text": "sin fuente"}',
            '{"no_text": 1}',
            '{"text": "   "}',
            '{"text": "mal indice", "chunk_index": -1}',
        ]
    )
    result = parse_jsonl(text, "datos/clientes.jsonl")
    assert [(c.source, c.chunk_index) for c in result.chunks] == [
        ("faq_horarios", 0),
        ("datos/clientes.jsonl#line3", 2),
    ]
    assert result.chunks[0].metadata == {"categoria": "soporte", "pagina": 12}
    assert [w.split(":")[0] for w in result.warnings] == ["line 2", "line 4", "line 5", "line 6"]
    assert "invalid JSON" in result.warnings[0]


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ('{"text": "t", "metadata": {"k": ' + "[" * 126 + "1" + "]" * 126 + "}}", "nested more"),
        ('{"text": "t", "k": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested more"),
        ('{"text": "t", "metadata": {"k": {"a": 1}}}', "metadata key 'k': a nested object"),
        ('{"text": "t", "tags": [[1]]}', "metadata key 'tags': a nested list"),
        ('{"text": "t", "embedding": ' + str(list(range(65))) + "}", "65 items"),
        ('{"text": "t", "k": NaN}', "k: NaN"),
        ('{"text": "t", "k": 9223372036854775808}', "k: integer outside"),
        ('{"text": "\\ud800"}', "text: contains a lone surrogate"),
        ('{"text": "t", "source": "\\udc00"}', "source: contains a lone surrogate"),
    ],
)
def test_jsonl_lines_the_store_cannot_hold_are_skipped(line: str, why: str) -> None:
    result = parse_jsonl('{"text": "kept"}\n' + line, "data.jsonl")
    assert [c.text for c in result.chunks] == ["kept"]
    assert len(result.warnings) == 1 and result.warnings[0].startswith("line 2: ")
    assert why in result.warnings[0]


def test_text_decoding(tmp_path: Path) -> None:
    latin = tmp_path / "latin.txt"
    latin.write_bytes("Política de devolución: 14 días.".encode("latin-1"))
    assert (
        read_chunks(latin, "latin.txt", SMALL).chunks[0].text == "Política de devolución: 14 días."
    )
    binary = tmp_path / "image.md"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 10)
    with pytest.raises(UnreadableFile, match="binary"):
        read_chunks(binary, "image.md", SMALL)
    noise = tmp_path / "noise.txt"
    noise.write_bytes(bytes(range(1, 32)) * 50)
    with pytest.raises(UnreadableFile, match="undecodable"):
        read_chunks(noise, "noise.txt", SMALL)
    layout = tmp_path / "layout.txt"  # tabs, newlines and form feeds are text, however many
    layout.write_text("a\tb\r\n\f" * 200)
    assert read_chunks(layout, "layout.txt", SMALL).chunks
    for control in ("\x08", "\x0b", "\x0e", "\x1f"):  # the ones around them are not
        noise.write_text(("word " + control) * 200)
        with pytest.raises(UnreadableFile, match="undecodable"):
            read_chunks(noise, "noise.txt", SMALL)
    empty = tmp_path / "empty.md"
    empty.write_text("")
    assert read_chunks(empty, "empty.md", SMALL).chunks == []


def test_docx_headings_become_sections(tmp_path: Path) -> None:
    import docx

    document = docx.Document()
    document.add_heading("Returns", level=2)
    document.add_paragraph(sentences(2, "return"))
    document.add_heading("Shipping", level=2)
    document.add_paragraph(sentences(2, "shipping"))
    path = tmp_path / "policy.docx"
    document.save(str(path))
    chunks = read_chunks(path, "policy.docx", SMALL).chunks
    assert [c.text.split("\n")[0] for c in chunks] == ["## Returns", "## Shipping"]


def test_ignore_rules_and_scan(tmp_path: Path) -> None:
    for rel in [
        "a.md",
        "sub/b.txt",
        ".hidden/c.md",
        "sub/.d.md",
        "_index.md",
        "e.md~",
        "f.swp",
        "#g.md#",
        "h.bin",
        "big.txt",
    ]:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x" * (2000 if rel == "big.txt" else 10))
    files, skipped = scan(tmp_path, max_bytes=1000)
    assert [f.rel for f in files] == ["a.md", "sub/b.txt"]
    assert skipped["_index.md"].startswith("generated") and skipped["e.md~"].startswith("editor")
    assert skipped["h.bin"] == "unsupported type" and "byte limit" in skipped["big.txt"]
    assert ".hidden/c.md" not in skipped and ignore_reason(".hidden/c.md") == "hidden"


def test_doc_hash_covers_content_and_chunking() -> None:
    base = doc_hash(b"text", SMALL)
    assert base == doc_hash(b"text", SMALL)
    assert base != doc_hash(b"text!", SMALL)
    assert base != doc_hash(b"text", ChunkingConfig(size=300, overlap=20))


MARKDOWN_LINES = [
    "# Title",
    "## Section two",
    "### Deep",
    "##### Jump",
    "#\tTabbed heading",
    "##   Spaced heading",
    "# ",
    "#NoSpace is text",
    "   # indented hash is text",
    "```",
    "   ```python",
    "# a comment inside a fence",
    "Plain words of a paragraph.",
    "",
    "   ",
    "- an item",
    "Windows line\r",
    "# Windows heading\r",
]


def test_markdown_is_cut_where_llama_index_cuts_it() -> None:
    """markdown_split replaces MarkdownNodeParser (its nodes cost a fifth of reading a file):
    the same sections, or every stored markdown chunk would change."""
    from llama_index.core import Document
    from llama_index.core.node_parser import MarkdownNodeParser

    parser = MarkdownNodeParser()
    rng = random.Random(7)
    texts = ["", "no heading at all", "# Only a heading", "```\n# fenced\n```\n# After"]
    texts += ["\n".join(rng.choices(MARKDOWN_LINES, k=rng.randint(1, 40))) for _ in range(400)]
    for text in texts:
        nodes = parser.get_nodes_from_documents([Document(text=text)])
        expected = [n.get_content().strip() for n in nodes if n.get_content().strip()]
        assert markdown_split(text) == expected, text
