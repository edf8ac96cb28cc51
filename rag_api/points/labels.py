"""What a chunk is and how good it is, from its text alone (no model call): its `type` and a
`quality` in [0, 1] with the reasons that lowered it. The strongest boilerplate signal, a block
repeated across the collection's files, comes from rag_api.points.repetition as `repeated`.

Rules and thresholds: docs/labels.md, "How chunks are labelled".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rag_api import payload
from rag_api.embedding.languages import FUNCTION_WORDS, function_words_in

# Raising this relabels every kb file once (it is part of the file hash, rag_api.indexing.kb);
# their vectors are reused by content hash.
LABELS_VERSION = 1

BOILERPLATE_SHARE = 0.5  # of a chunk's letters in blocks repeated across the collection
# what each reason takes off a quality of 1
PENALTY = {
    "too_short": 0.5,  # too little to answer anything
    "mostly_symbols": 0.35,  # mostly digits, punctuation and symbols
    "broken_extraction": 0.75,  # mojibake, hyphenation debris, one letter per line
    "other_language": 0.3,  # another language than the collection's
    "truncated": 0.15,  # starts and ends mid-sentence
}
OCR_TRUSTED = 0.8  # below this OCR confidence, quality drops 1.5 per point short of it
OCR_REASON = "low_ocr_confidence"

_NON_LETTERS = re.compile(r"[\W\d_]+")
_INVISIBLE = re.compile(r"[\s|\-:#*]+")  # spaces and table or markdown markers
FURNITURE_LINE = 300  # longer lines are paragraphs: no menu, notice or contents line is this long
_WORD = re.compile(r"[^\W\d_]+")
_HEADING = re.compile(r"^#{1,6}\s+\S")
_ITEM = re.compile(r"^\s*(?:[-*+•·▪●◦]|\d{1,3}[.)]|[a-zA-Z][.)])\s+\S")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_CODE_LINE = re.compile(
    r"[{};]\s*$|^\s*(?:def|class|import|from \S+ import|return|function|const|let|var|public|"
    r"private|#include|SELECT|INSERT|UPDATE|<\w+[ >/])\b|^\s*(?:[$>] )?\w[\w.]*\(.*\)\s*$"
)
# a table of contents line: a title, dot leaders (or wide spacing), a page number
TOC_LINE = re.compile(r"^(?:[-*+]\s+)?\S.{1,120}?(?:\s*\.{3,}\s*|\s*…+\s*|\s{2,}|\t)\d{1,4}$")
CONTENTS = re.compile(
    r"^#*\s*(table of contents|contents|índice|indice|contenido|sommario|indice dei contenuti)"
    r"\s*$",
    re.I,
)
PAGE_MARK = re.compile(
    r"^(?:page|página|pagina|pag\.|p\.)?\s*\d{1,4}(?:\s*(?:of|de|di|/)\s*\d{1,4})?$", re.I
)
_LEGAL = re.compile(
    r"cookie|all rights reserved|todos los derechos reservados|tutti i diritti riservati|"
    r"privacy policy|política de privacidad|informativa sulla privacy|terms of (?:use|service)|"
    r"términos (?:y condiciones|de uso)|termini (?:e condizioni|di utilizzo)|©|\(c\) \d{4}|"
    r"copyright|aviso legal|note legali|legal notice|accept all|aceptar todas|accetta tutti",
    re.I,
)
_NAV_WORD = re.compile(
    r"^(?:[-*+]\s+)?(?:home|inicio|menu|menú|search|buscar|cerca|contact(?: us)?|contacto|"
    r"contatti|about(?: us)?|quiénes somos|chi siamo|log ?in|sign in|sign up|register|"
    r"skip to (?:main )?content|blog|news|noticias|notizie|careers|shop|tienda|help|ayuda|"
    r"aiuto|faq|products|productos|prodotti|services|servicios|servizi|next|previous|siguiente|"
    r"anterior|successivo|precedente|back to top|share|compartir|condividi)$",
    re.I,
)
_QUESTION_START = re.compile(r"^(?:#{1,6}\s+)?(?:¿|q:|q\.|question:|pregunta:|domanda:|p:)", re.I)
_MOJIBAKE = re.compile(r"Ã[\x80-\xbf¡-ÿ]|â€|Â[\xa0-\xbf]|\ufffd|ï¿½")
_HYPHEN_DEBRIS = re.compile(r"[^\W\d_]{2,}- [a-zà-ÿ]{2,}")
_SENTENCE_END = re.compile(r"[.!?:;)\]\"'»”…]\s*$")


@dataclass(frozen=True, slots=True)
class Label:
    type: str
    quality: float
    reasons: tuple[str, ...] = ()

    def payload(self) -> dict[str, Any]:
        return {
            payload.TYPE: self.type,
            payload.QUALITY: self.quality,
            payload.QUALITY_REASONS: list(self.reasons),
        }


def label(
    text: str,
    language: str,
    metadata: Mapping[str, Any] | None = None,
    repeated: float = 0.0,
) -> Label:
    """The chunk's type and quality; `repeated`: the share of its letters in blocks repeated
    across the collection (rag_api.points.repetition)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    letters = len(_NON_LETTERS.sub("", text))
    kind = "boilerplate" if repeated >= BOILERPLATE_SHARE else chunk_type(lines, letters)
    reasons = quality_reasons(text, lines, letters, language, kind)
    score = 1.0 - sum(PENALTY.get(reason, 0.0) for reason in reasons)
    confidence = (metadata or {}).get("ocr_confidence")
    if isinstance(confidence, int | float) and not isinstance(confidence, bool):
        if confidence < OCR_TRUSTED:
            reasons.append(OCR_REASON)
            score -= 1.5 * (OCR_TRUSTED - float(confidence))
    return Label(kind, round(min(1.0, max(0.0, score)), 2), tuple(reasons))


def chunk_type(lines: list[str], letters: int) -> str:
    """What a chunk is by its lines (the repetition signal aside)."""
    if not lines:
        return "boilerplate"
    if _is_furniture(lines, letters):
        return "boilerplate"
    body = [line for line in lines if not _HEADING.match(line)]
    if sum(len(line) for line in body) < 80 and len(body) < len(lines):
        return "heading"
    if _share(body, _TABLE_ROW, longest=100_000) >= 0.5:
        return "table"
    if "```" in "\n".join(lines) or (len(body) >= 3 and _share(body, _CODE_LINE) >= 0.6):
        return "code"
    if _is_qa(lines):
        return "qa"
    if len(body) >= 2 and _share(body, _ITEM) >= 0.5:
        return "list"
    return "prose"


def _is_furniture(lines: list[str], letters: int) -> bool:
    """A table of contents, page numbers and running marks, a cookie/legal notice or a
    navigation menu, recognised without the collection's help."""
    if len(lines) >= 3 and (
        _share(lines, TOC_LINE) >= 0.6
        or (CONTENTS.match(lines[0]) and _share(lines[1:], TOC_LINE) >= 0.4)
    ):
        return True
    if _share(lines, PAGE_MARK) >= 0.6:
        return True
    legal = sum(len(_NON_LETTERS.sub("", line)) for line in lines if _is_notice(line))
    if legal >= 0.5 * letters:
        return True
    short = [line for line in lines if len(line.split()) <= 4]
    nav = sum(1 for line in lines if _NAV_WORD.match(line))
    return len(lines) >= 3 and nav >= 2 and len(short) >= 0.7 * len(lines)


def _is_notice(line: str) -> bool:
    """A cookie or legal line: a short one naming it (`© 2024 Acme`), or two mentions in one
    line of a banner's length; one mention inside a paragraph is content."""
    if len(line) > FURNITURE_LINE:
        return False
    mentions = len(_LEGAL.findall(line)) if len(line) > 80 else bool(_LEGAL.search(line))
    return mentions >= (2 if len(line) > 80 else 1)


def _is_qa(lines: list[str]) -> bool:
    """A question on a line of its own (a heading, `Q:`, ¿…?) followed by its answer."""
    for question, answer in zip(lines, lines[1:], strict=False):
        asked = question.endswith("?") or _QUESTION_START.match(question)
        if asked and len(question) <= 200 and not answer.endswith("?"):
            return len(answer.split()) >= 4
    return False


def quality_reasons(
    text: str, lines: list[str], letters: int, language: str, kind: str
) -> list[str]:
    """What lowers a chunk's quality, in PENALTY's order (OCR confidence aside)."""
    reasons = []
    words = _WORD.findall(text.lower())
    if len(words) < 6 or letters < 30:
        reasons.append("too_short")
    visible = len(_INVISIBLE.sub("", text))
    if visible and letters / visible < 0.5:
        reasons.append("mostly_symbols")
    if _broken(text, lines, words):
        reasons.append("broken_extraction")
    if _other_language(words, language):
        reasons.append("other_language")
    if kind == "prose" and _truncated(lines):
        reasons.append("truncated")
    return reasons


def _broken(text: str, lines: list[str], words: list[str]) -> bool:
    suspect = "Ã" in text or "â€" in text or "Â" in text or "\ufffd" in text
    if suspect and len(_MOJIBAKE.findall(text)) >= 2:
        return True
    if "- " in text and len(_HYPHEN_DEBRIS.findall(text)) >= 3:
        return True
    if len(lines) >= 6 and sum(1 for line in lines if len(line) <= 2) >= 0.5 * len(lines):
        return True
    # letters spaced out ("T h i s  i s"): most words one letter long
    return len(words) >= 12 and list(map(len, words)).count(1) >= 0.6 * len(words)


def _other_language(words: list[str], language: str) -> bool:
    """Clearly written in another of the hub's languages: at least 3 of its function words and
    three times as many as of the collection's own."""
    if language not in FUNCTION_WORDS or len(words) < 12:
        return False
    own = function_words_in(words, language)
    for other in FUNCTION_WORDS:
        if other != language:
            theirs = function_words_in(words, other)
            if theirs >= 3 and theirs >= 3 * max(own, 1):
                return True
    return False


def _truncated(lines: list[str]) -> bool:
    """Starts mid-sentence (a lower-case first word) and ends without closing punctuation."""
    first, last = lines[0], lines[-1]
    return first[:1].islower() and not _SENTENCE_END.search(last)


def _share(lines: list[str], pattern: re.Pattern[str], longest: int = FURNITURE_LINE) -> float:
    """The share of lines that match (a line longer than `longest` never does)."""
    if not lines:
        return 0.0
    return sum(1 for line in lines if len(line) <= longest and pattern.search(line)) / len(lines)
