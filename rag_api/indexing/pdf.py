"""Paged formats: a PDF's pages (the text layer, or OCR where a page has none) and image files
(OCR), sections with their page number and, when OCR read it, `ocr` and `ocr_confidence`. A PDF
page's furniture is a section apart from its content (rag_api.indexing.layout), and the first
section carries the document's title when its first page shows one."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from rag_api.indexing import ocr
from rag_api.indexing.layout import BODY_PAGES, collect_sizes, split_furniture, title_of
from rag_api.indexing.ocr import OcrOptions
from rag_api.indexing.readers import Section, UnreadableFile, _extra

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff")
MIN_IMAGE_PX = 16  # smaller: a rule, a bullet, a logo's sliver, not text


def read_pdf(path: Path, scans: ScanReader | None = None) -> list[Section]:
    """One section per page with text; a page without a text layer is read by OCR when `scans`
    can. A PDF without any text (a scan nobody could read) is unreadable, not empty."""
    pypdf = _extra("pypdf", "PDF", "pdf")
    scans = scans or ScanReader(None)
    runs: list[list[tuple[str, float]]] = []  # the first pages' text runs and their sizes
    try:
        pages = list(pypdf.PdfReader(str(path)).pages)
        texts = [
            (
                page.extract_text(visitor_text=collect_sizes(runs) if n < BODY_PAGES else None)
                or ""
            ).strip()
            for n, page in enumerate(pages)
        ]
    except Exception as exc:  # pypdf raises many kinds on damaged files
        raise UnreadableFile(f"unreadable PDF: {exc}") from exc
    found = {n: Section(t, {"page": n}, markdown=False) for n, t in enumerate(texts, 1) if t}
    blank = [n for n, t in enumerate(texts, 1) if not t]
    if blank and scans.engine is not None:
        _extra("PIL.Image", "OCR", "ocr")  # pypdf decodes a page's images with Pillow
        items = ((n, functools.partial(_page_images, pages[n - 1])) for n in blank)
        found.update(scans.read(items, len(blank)))
    elif blank and found:
        scans.warnings.append(
            f"{len(blank)} page(s) without a text layer not read ({_numbers(blank)}): "
            f"{scans.missing}"
        )
    if pages and not found:
        why = f"OCR found no text on them{scans.failures()}" if scans.engine else scans.missing
        raise UnreadableFile(
            f"no extractable text in {len(pages)} page(s): a scanned PDF without a text layer; "
            + why
        )
    return _with_furniture_apart([found[n] for n in sorted(found)], title_of(runs))


def _with_furniture_apart(pages: list[Section], title: str | None) -> list[Section]:
    """Each page as its content and then its furniture (running lines, page numbers, a table of
    contents), sections of their own; the first carries the document's title."""
    sections = []
    split = split_furniture([page.text for page in pages], title)
    for page, parts in zip(pages, split, strict=True):
        sections += [Section(text, dict(page.metadata), markdown=False) for text in parts if text]
    if sections:
        sections[0].title = title
    return sections


def _page_images(page: Any) -> list[Any]:
    """The images drawn on a PDF page, in order (a scanned page is normally one)."""
    return [image.image for image in page.images]


def _numbers(pages: list[int], limit: int = 8) -> str:
    shown = ", ".join(str(n) for n in pages[:limit])
    return f"page {shown}" + (f" and {len(pages) - limit} more" if len(pages) > limit else "")


def read_image(path: Path, scans: ScanReader | None = None) -> list[Section]:
    """An image file read by OCR: one section per frame (the pages of a multi-page TIFF)."""
    scans = scans or ScanReader(None)
    if scans.engine is None:
        raise UnreadableFile(f"an image: its text is read by OCR, and {scans.missing}")
    image_module = _extra("PIL.Image", "OCR", "ocr")
    try:
        image = image_module.open(path)
        frames = getattr(image, "n_frames", 1)
    except Exception as exc:  # Pillow's UnidentifiedImageError, decompression bombs, OSError
        raise UnreadableFile(f"unreadable image: {exc}") from exc

    def frame(index: int) -> list[Any]:
        image.seek(index)
        return [image.copy()]

    with image:
        items = (
            (n + 1 if frames > 1 else None, functools.partial(frame, n)) for n in range(frames)
        )
        sections = [section for _, section in scans.read(items, frames, image.info.get("dpi"))]
    if not sections:
        raise UnreadableFile(f"OCR found no text in the image{scans.failures()}")
    return sections


class ScanReader:
    """OCR of one file's scanned pages or frames with the collection's Tesseract: each page
    bounded in time, a page that fails a warning (`warnings`), progress through the options."""

    def __init__(self, options: OcrOptions | None) -> None:
        self.options = options or OcrOptions(enabled=False)
        self.engine = ocr.engine(self.options)
        self.missing = ocr.missing_reason(self.options) or ""
        self.warnings: list[str] = []
        self._failed: list[str] = []

    def read(
        self,
        pages: Iterable[tuple[int | None, Callable[[], list[Any]]]],
        count: int,
        dpi: Any = None,
    ) -> Iterator[tuple[int | None, Section]]:
        """(page number or None, a function returning its images) -> (page, section) for each
        page OCR found text on; a failed page is a warning and the next one is read."""
        assert self.engine is not None
        if self.engine.warning:
            self.warnings.append(self.engine.warning)
        for done, (number, images) in enumerate(pages, 1):
            if self.options.on_page is not None:
                self.options.on_page(done, count)
            where = f"page {number}" if number is not None else "the image"
            try:
                found = self._page(images(), _dpi(dpi))
            except ocr.OcrFailed as exc:
                self._fail(f"{where}: OCR {exc}; not indexed")
                continue
            except Exception as exc:  # pypdf or Pillow cannot decode the image
                self._fail(f"{where}: its image cannot be decoded ({exc}); not indexed")
                continue
            if found is not None:
                metadata: dict[str, Any] = {} if number is None else {"page": number}
                metadata |= {"ocr": True, "ocr_confidence": round(found.confidence, 2)}
                yield number, Section(found.text, metadata, markdown=False)

    def failures(self) -> str:
        """What went wrong (failed pages, a missing pack), as a tail for a message; "" if nothing."""
        told = self._failed[:3] + (
            [self.engine.warning] if self.engine and self.engine.warning else []
        )
        return f" ({'; '.join(told)})" if told else ""

    def _fail(self, warning: str) -> None:
        self._failed.append(warning)
        self.warnings.append(warning)

    def _page(self, images: list[Any], dpi: int | None) -> ocr.Recognized | None:
        """One page's images read in order, within the page's time; None when none holds text."""
        assert self.engine is not None
        deadline = time.monotonic() + self.options.page_timeout_s
        texts, words, weighted = [], 0, 0.0
        for image in images:
            if min(image.size) < MIN_IMAGE_PX:  # a rule, a bullet, a logo's sliver
                continue
            bound = f"took longer than {self.options.page_timeout_s:g} s and was stopped"
            left = deadline - time.monotonic()
            if left <= 0:
                raise ocr.OcrTimeout(bound)
            try:
                found = ocr.recognize(
                    _flat(image),
                    self.engine.pack,
                    left,
                    binary=self.engine.binary,
                    nice=self.options.nice,
                    dpi=dpi,
                )
            except ocr.OcrTimeout:
                raise ocr.OcrTimeout(bound) from None
            if found.text.strip():
                texts.append(found.text)
                words += found.words
                weighted += found.confidence * found.words
        if not texts:
            return None
        return ocr.Recognized("\n\n".join(texts), weighted / words if words else 0.0, words)


def _flat(image: Any) -> Any:
    """Grayscale on white: a transparent background would otherwise turn black."""
    if image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info:
        pil = _extra("PIL.Image", "OCR", "ocr")
        rgba = image.convert("RGBA")
        return pil.alpha_composite(pil.new("RGBA", rgba.size, "white"), rgba).convert("L")
    return image if image.mode == "L" else image.convert("L")


def _dpi(value: Any) -> int | None:
    """An image's resolution when it says one that Tesseract can use (it guesses otherwise)."""
    try:
        dpi = round(float(value[0]))
    except (TypeError, ValueError, IndexError):
        return None
    return dpi if 70 <= dpi <= 2400 else None
