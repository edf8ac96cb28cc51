"""Scanned PDFs and images are read with the real Tesseract: the words arrive in the chunks with
`ocr`, the page and a confidence; without Tesseract, or with `ocr: off`, the finding says what to
install; a page past its time bound is a warning and the rest of the file is indexed."""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path

import pypdf
import pytest
from PIL import Image, ImageDraw, ImageFont

from rag_api.config import ChunkingConfig
from rag_api.hub import Hub
from rag_api.indexing import kb, ocr
from rag_api.indexing.chunking import reading_identity
from rag_api.indexing.sync import sync_collection
from tests.conftest import hash_collection, write_config
from tests.indexing.test_formats import write_pdf

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
TESSERACT = shutil.which("tesseract")
needs_tesseract = pytest.mark.skipif(
    TESSERACT is None or not {"eng", "spa"} <= ocr.installed_packs(TESSERACT),
    reason="Tesseract with eng and spa is not installed: apt-get install tesseract-ocr "
    "tesseract-ocr-eng tesseract-ocr-spa",
)

ENGLISH = [
    "The warranty covers the compressor for seven years.",
    "Returns are accepted within thirty days of delivery.",
]
ENGLISH_2 = ["Invoices are payable by bank transfer only.", "The depot closes on Fridays."]
SPANISH = [
    "La biblioteca municipal abre los lunes por la mañana.",
    "El préstamo de libros dura quince días.",
]


def scanned(lines: list[str], seed: int = 1) -> Image.Image:
    """A page as a scanner sees it: dark text on white, turned a little, with speckles."""
    font = ImageFont.truetype(FONT, 26)
    page = Image.new("L", (1000, 60 + 44 * len(lines)), 255)
    draw = ImageDraw.Draw(page)
    for n, line in enumerate(lines):
        draw.text((30, 30 + 44 * n), line, fill=20, font=font)
    page = page.rotate(0.8, expand=True, fillcolor=255, resample=Image.Resampling.BICUBIC)
    rng = random.Random(seed)
    for _ in range(page.width * page.height // 400):
        page.putpixel(
            (rng.randrange(page.width), rng.randrange(page.height)), rng.choice([90, 255])
        )
    return page


def save_pdf(path: Path, pages: list[Image.Image]) -> None:
    """An image-only PDF, one scanned image a page."""
    pages[0].save(path, "PDF", resolution=150, save_all=True, append_images=pages[1:])


def chunks(hub: Hub, name: str) -> list[dict]:
    """Every chunk's payload in the collection."""
    physical = hub.collection(name).info(refresh=True).physical
    return [record.payload for record in hub.store.iter_records(physical)]


def of(payloads: list[dict], file: str) -> list[dict]:
    return sorted((p for p in payloads if p["file"] == file), key=lambda p: p["chunk_index"])


def words(payloads: list[dict]) -> set[str]:
    return set(re.findall(r"\w+", " ".join(p["text"] for p in payloads).lower()))


@pytest.fixture
def kbs(tmp_path: Path) -> tuple[Path, Path]:
    english, spanish = tmp_path / "en", tmp_path / "es"
    english.mkdir()
    spanish.mkdir()
    save_pdf(english / "scan.pdf", [scanned(ENGLISH), scanned(ENGLISH_2, seed=2)])
    scanned(ENGLISH_2, seed=3).save(english / "notice.png")
    save_pdf(spanish / "escaneo.pdf", [scanned(SPANISH)])
    scanned(SPANISH, seed=4).save(spanish / "aviso.png")
    return english, spanish


def open_with(tmp_path, make_settings, open_hub, collections: dict, **settings) -> Hub:
    config = write_config(tmp_path / "collections.yaml", collections)
    return open_hub(make_settings(config, **settings))


def open_both(kbs, tmp_path, make_settings, open_hub) -> Hub:
    """A hub with the English kb as `en` and the Spanish one as `es`."""
    english, spanish = kbs
    collections = {"en": hash_collection(english), "es": hash_collection(spanish, language="es")}
    return open_with(tmp_path, make_settings, open_hub, collections)


@needs_tesseract
def test_scanned_pdfs_and_images_are_read_in_english_and_spanish(
    kbs, tmp_path, make_settings, open_hub
) -> None:
    hub = open_both(kbs, tmp_path, make_settings, open_hub)
    for name in ("en", "es"):
        report = sync_collection(hub.collection(name))
        assert (report.indexed, report.errors, report.warnings) == (2, {}, {})

    scan = of(chunks(hub, "en"), "scan.pdf")
    assert {"warranty", "compressor", "returns", "delivery"} <= words(scan)
    assert {"invoices", "transfer", "depot"} <= words(scan)
    assert {p["metadata"]["page"] for p in scan} == {1, 2}
    for chunk in scan:
        assert chunk["metadata"]["ocr"] is True
        assert 0.5 <= chunk["metadata"]["ocr_confidence"] <= 1
        assert chunk["metadata"]["ocr_confidence"] == round(chunk["metadata"]["ocr_confidence"], 2)
    notice = of(chunks(hub, "en"), "notice.png")
    assert "depot" in words(notice) and "page" not in notice[0]["metadata"]
    assert notice[0]["metadata"]["ocr"] is True

    spanish_chunks = chunks(hub, "es")
    for file in ("escaneo.pdf", "aviso.png"):
        assert {"biblioteca", "préstamo", "días"} <= words(of(spanish_chunks, file))  # accents
    assert of(spanish_chunks, "escaneo.pdf")[0]["metadata"]["page"] == 1


@needs_tesseract
def test_a_page_past_its_time_bound_is_a_warning_and_the_rest_is_indexed(
    tmp_path, make_settings, open_hub
) -> None:
    folder = tmp_path / "kb"
    folder.mkdir()
    write_pdf(tmp_path / "text.pdf", ["Opening hours of the museum are posted online."])
    save_pdf(tmp_path / "image.pdf", [scanned(ENGLISH)])
    merged = pypdf.PdfWriter()
    for part in ("text.pdf", "image.pdf"):
        merged.append(str(tmp_path / part))
    merged.write(str(folder / "mixed.pdf"))
    collections = {"docs": hash_collection(folder)}
    hub = open_with(tmp_path, make_settings, open_hub, collections, ocr_page_timeout_s=0.001)

    report = sync_collection(hub.collection("docs"))
    assert report.indexed == 1 and report.errors == {}
    [warning] = report.warnings["mixed.pdf"]
    assert warning.startswith("page 2: OCR took longer than 0.001 s") and "not indexed" in warning
    stored = of(chunks(hub, "docs"), "mixed.pdf")
    assert [p["metadata"] for p in stored] == [{"page": 1}]
    assert "museum" in stored[0]["text"]


def test_without_tesseract_a_scan_and_an_image_say_what_to_install(
    kbs, tmp_path, make_settings, open_hub, monkeypatch
) -> None:
    hub = open_both(kbs, tmp_path, make_settings, open_hub)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    english_errors = sync_collection(hub.collection("en")).errors
    assert "no extractable text in 2 page(s)" in english_errors["scan.pdf"]
    assert english_errors["scan.pdf"].endswith(
        "Tesseract is not installed: apt-get install tesseract-ocr tesseract-ocr-eng"
    )
    assert english_errors["notice.png"].startswith("an image: its text is read by OCR")
    assert "apt-get install tesseract-ocr tesseract-ocr-eng" in english_errors["notice.png"]
    spanish_errors = sync_collection(hub.collection("es")).errors
    assert set(spanish_errors) == {"escaneo.pdf", "aviso.png"}
    for reason in spanish_errors.values():
        assert "apt-get install tesseract-ocr tesseract-ocr-spa" in reason


def test_ocr_off_keeps_the_finding(kbs, tmp_path, make_settings, open_hub) -> None:
    english, _ = kbs
    collections = {"en": hash_collection(english, ocr="off")}
    hub = open_with(tmp_path, make_settings, open_hub, collections)
    errors = sync_collection(hub.collection("en")).errors
    assert "no extractable text in 2 page(s)" in errors["scan.pdf"]
    assert "OCR is off for this collection" in errors["scan.pdf"]
    assert "OCR is off for this collection" in errors["notice.png"]


@needs_tesseract
def test_a_missing_language_pack_falls_back_to_english_naming_the_pack(
    kbs, tmp_path, make_settings, open_hub, monkeypatch
) -> None:
    _, spanish = kbs
    tessdata = tmp_path / "tessdata"
    tessdata.mkdir()
    found = next(Path("/usr/share/tesseract-ocr").rglob("eng.traineddata"), None)
    if found is None:
        pytest.skip("no eng.traineddata under /usr/share/tesseract-ocr (not Debian's layout)")
    (tessdata / "eng.traineddata").symlink_to(found)
    (tessdata / "configs").symlink_to(found.parent / "configs")  # `tsv` output is a config
    monkeypatch.setenv("TESSDATA_PREFIX", str(tessdata))
    collections = {"es": hash_collection(spanish, language="es")}
    hub = open_with(tmp_path, make_settings, open_hub, collections)
    report = sync_collection(hub.collection("es"))
    assert report.indexed == 2
    for warnings in report.warnings.values():
        assert any(
            "'spa' is not installed, read with 'eng'" in w and "tesseract-ocr-spa" in w
            for w in warnings
        )


def test_the_file_identity_follows_the_ocr_setting(tmp_path: Path) -> None:
    cut = ChunkingConfig(**hash_collection()["chunking"])
    on, off = ocr.OcrOptions(enabled=True), ocr.OcrOptions(enabled=False)
    scan, note = tmp_path / "scan.pdf", tmp_path / "note.md"

    def identity(path: Path, options: ocr.OcrOptions) -> str:
        return kb.doc_hash(b"same bytes", cut, reading_identity(path, options))

    assert identity(scan, on) != identity(scan, off)
    assert identity(tmp_path / "photo.tiff", on) != identity(tmp_path / "photo.tiff", off)
    assert identity(note, on) == identity(note, off) == kb.doc_hash(b"same bytes", cut)
