"""Optical character recognition with the `tesseract` binary (Debian's tesseract-ocr): the text of
a scanned page or an image, with the recognizer's mean word confidence (docs/indexing.md, "OCR").

Tesseract runs as a child process fed through stdin: no Python binding to install, each page
bounded in time (a page past it is killed and reported, the rest of the file goes on), and the
process started at the indexing's lower priority (RAG_BATCH_NICE) so queries keep the cores.
"""

from __future__ import annotations

import functools
import io
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

PACKS = {"en": "eng", "es": "spa", "it": "ita"}  # collection language -> Tesseract language pack
FALLBACK_PACK = "eng"
PAGE_TIMEOUT_S = 60.0
MAX_NICE = 19
ERROR_CHARS = 200


class OcrFailed(Exception):
    """Tesseract could not read one page or image; the message says why."""


class OcrTimeout(OcrFailed):
    """Tesseract took longer than it was given and was stopped."""


@dataclass(frozen=True, slots=True)
class OcrOptions:
    """How a collection reads scanned pages and images: `enabled` is its `ocr: auto`."""

    enabled: bool = True
    language: str = "en"
    page_timeout_s: float = PAGE_TIMEOUT_S
    nice: int = 0  # nice levels below the indexing thread that Tesseract runs at
    # called before each page a file's OCR reads: (page among those OCR reads, how many)
    on_page: Callable[[int, int], None] | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Recognized:
    text: str
    confidence: float  # mean word confidence, 0..1 (0 when no word was found)
    words: int


def pack(language: str) -> str:
    """The Tesseract language pack of a collection language."""
    return PACKS.get(language, FALLBACK_PACK)


def install_line(language: str) -> str:
    """What to install for OCR in `language` (Debian/Ubuntu)."""
    return f"apt-get install tesseract-ocr tesseract-ocr-{pack(language)}"


def find_tesseract() -> str | None:
    """The `tesseract` binary on PATH, or None."""
    return shutil.which("tesseract")


def installed_packs(binary: str) -> frozenset[str]:
    """The language packs `binary --list-langs` names (empty if it cannot tell); asked once per
    binary and TESSDATA_PREFIX (the folder of packs it reads)."""
    return _listed_packs(binary, os.environ.get("TESSDATA_PREFIX"))


@functools.lru_cache(maxsize=8)
def _listed_packs(binary: str, tessdata: str | None) -> frozenset[str]:
    try:
        done = subprocess.run(
            [binary, "--list-langs"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    # 'List of available languages in "/usr/share/tesseract-ocr/5/tessdata/" (4):', one a line
    lines = (line.strip() for line in (done.stdout + "\n" + done.stderr).splitlines())
    return frozenset(line for line in lines if line and " " not in line and ":" not in line)


@dataclass(frozen=True, slots=True)
class Engine:
    """Tesseract as a collection uses it: the binary, the pack it reads with, and a warning when
    that is the fallback (the collection's own pack is not installed)."""

    binary: str
    pack: str
    warning: str | None = None


def missing_reason(options: OcrOptions) -> str | None:
    """Why OCR does not run for these options (off, or Tesseract not installed); None when it
    does."""
    if not options.enabled:
        return "OCR is off for this collection (`ocr: auto` reads it with Tesseract)"
    if find_tesseract() is None:
        return f"Tesseract is not installed: {install_line(options.language)}"
    return None


def engine(options: OcrOptions) -> Engine | None:
    """The Tesseract this collection reads with; None when OCR is off or not installed."""
    binary = find_tesseract() if options.enabled else None
    if binary is None:
        return None
    wanted = pack(options.language)
    packs = installed_packs(binary)
    if wanted in packs or not packs:  # not listed at all: let Tesseract itself say
        return Engine(binary, wanted)
    return Engine(
        binary,
        FALLBACK_PACK,
        f"the Tesseract language pack '{wanted}' is not installed, read with "
        f"'{FALLBACK_PACK}' instead: {install_line(options.language)}",
    )


OCR_RUNS = "ocr:read:"  # the start of an identity under which OCR reads the file


def identity(options: OcrOptions) -> str:
    """What of the OCR setup decides a file's text: part of the identity of the files OCR reads,
    so switching `ocr`, the language or installing Tesseract reads them again."""
    found = engine(options)
    if found is None:
        return "ocr:off" if not options.enabled else "ocr:missing"
    return f"{OCR_RUNS}{found.pack}"


def recognize(
    image: Any,
    language_pack: str,
    timeout_s: float,
    *,
    binary: str | None = None,
    nice: int = 0,
    dpi: int | None = None,
) -> Recognized:
    """The text of a Pillow image (paragraphs apart by a blank line, lines kept) and its mean word
    confidence; OcrFailed when Tesseract fails or takes longer than `timeout_s`."""
    binary = binary or find_tesseract()
    if binary is None:
        raise OcrFailed("Tesseract is not installed")
    command = [binary, "stdin", "stdout", "-l", language_pack, "--psm", "3"]
    if dpi:
        command += ["--dpi", str(dpi)]
    # one thread a page: Tesseract's OpenMP team only slows it down on a loaded machine
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    try:
        process = subprocess.Popen(
            [*command, "tsv"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
    except OSError as exc:
        raise OcrFailed(f"cannot run {binary}: {exc.strerror or exc}") from exc
    _lower(process.pid, nice)
    try:
        out, err = process.communicate(_pnm(image), timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise OcrTimeout(f"took longer than {timeout_s:g} s and was stopped") from None
    if process.returncode != 0:
        detail = err.decode("utf-8", "replace").strip()[-ERROR_CHARS:]
        raise OcrFailed(f"tesseract exited with {process.returncode}: {detail}")
    tsv = out.decode("utf-8", "replace")
    if not tsv.startswith("level\t"):  # a tessdata folder without configs/tsv prints plain text
        raise OcrFailed(f"tesseract wrote no TSV (is configs/tsv in its tessdata?): {tsv[:80]!r}")
    return parse_tsv(tsv)


def parse_tsv(tsv: str) -> Recognized:
    """Tesseract's TSV output as text (words of a line joined, lines of a paragraph apart by a
    newline, paragraphs by a blank line) and the mean confidence of its words."""
    paragraphs: list[list[list[str]]] = []
    where: tuple[str, ...] | None = None
    line_at: tuple[str, ...] | None = None
    confidences: list[float] = []
    for row in tsv.splitlines()[1:]:
        cells = row.split("\t")
        if len(cells) < 12 or cells[0] != "5" or not cells[11].strip():
            continue
        page, block, par, line = cells[1:5]
        if (page, block, par) != where:
            where, line_at = (page, block, par), None
            paragraphs.append([])
        if (page, block, par, line) != line_at:
            line_at = (page, block, par, line)
            paragraphs[-1].append([])
        paragraphs[-1][-1].append(cells[11].strip())
        try:
            confidences.append(max(0.0, min(100.0, float(cells[10]))) / 100)
        except ValueError:
            pass
    text = "\n\n".join("\n".join(" ".join(words) for words in lines) for lines in paragraphs)
    mean = sum(confidences) / len(confidences) if confidences else 0.0
    return Recognized(text, mean, len(confidences))


def _pnm(image: Any) -> bytes:
    """The image as grayscale PGM, which Tesseract (Leptonica) reads without a codec."""
    buffer = io.BytesIO()
    (image if image.mode == "L" else image.convert("L")).save(buffer, format="PPM")
    return buffer.getvalue()


def _lower(pid: int, steps: int) -> None:
    """Run the child `steps` nice levels below this thread (Linux; nothing elsewhere)."""
    if steps <= 0 or not sys.platform.startswith("linux"):
        return
    try:
        current = os.getpriority(os.PRIO_PROCESS, pid)
        os.setpriority(os.PRIO_PROCESS, pid, min(MAX_NICE, current + steps))
    except OSError:  # already gone, or a sandbox that forbids it: it runs at full priority
        pass
