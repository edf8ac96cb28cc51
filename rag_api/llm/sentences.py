"""A passage's sentences as an extractive answer quotes them: wrapped lines joined, markdown and
HTML left in the text stripped, headings and FAQ questions marked."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

# a sentence ends at . ! ? before a word that does not start in lower case ("e.g. a" goes on),
# unless the dot ends an initial or a title ("M. Theo Kearney", "a. C.", "St. Johns", "EE. UU.")
_SENTENCE = re.compile(
    r"(?<=[.!?])(?<!\b[^\W\d_]\.)(?<!\b(?:St|Dr|Mr|Ms|Sr|Jr|EE)\.)(?<!\b(?:Mrs|Sra|Sta)\.)"
    r"\s+(?=[^\sa-zà-ÿ])"
)
_SOFT_BREAK = re.compile(r"(?<=\S)\n(?!\s*(?:#{1,6}\s|[-*+]\s|\d+[.)]\s|\n|\|))")
_HEADING = re.compile(r"^\s*#{1,6}\s")
_LINE_MARK = re.compile(r"^\s*(?:#{1,6}\s+|>\s*|[-*+]\s+|\d+[.)]\s+)")
_TAG = re.compile(r"</?[A-Za-z][^<>]{0,200}>")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_EMPHASIS = re.compile(r"(\*{1,3}|_{2,3})(?=\S)(.+?)(?<=\S)\1")
_CODE = re.compile(r"`+([^`]+)`+")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Sentence:
    text: str  # plain text: no markdown, no HTML
    heading: bool  # a heading line: it names the topic, the answer follows it
    position: int  # its place in the passage, from 0


def plain(text: str) -> str:
    """`text` without the markdown and HTML a reader would see as markup."""
    text = html.unescape(_TAG.sub(" ", text))
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _CODE.sub(r"\1", text)
    text = _EMPHASIS.sub(r"\2", text)
    text = _LINE_MARK.sub("", text)
    if "|" in text:  # a table row: its cells, separated
        text = ", ".join(
            cell.strip() for cell in text.strip().strip("|").split("|") if cell.strip()
        )
    return _SPACES.sub(" ", text).strip()


def split_sentences(text: str) -> list[Sentence]:
    """The sentences of a passage in order: a wrapped line continues its sentence; a line of its
    own (a heading, a list item, a table row) is one."""
    text = _SOFT_BREAK.sub(" ", text)
    out: list[Sentence] = []
    for line in text.splitlines():
        heading = bool(_HEADING.match(line))
        for part in [line] if heading else _SENTENCE.split(line):
            if not part.strip() or _TABLE_RULE.match(part):
                continue
            clean = plain(part)
            if len(clean) > 1:
                out.append(Sentence(clean, heading, len(out)))
    return out
