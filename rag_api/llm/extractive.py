"""The extractive answer (no LLM): the sentences of the top passages likeliest to answer the
question (one when it is clear, up to three when it is not), quoted in the passages' order, each
cited [n].

Each sentence of the first `MAX_PASSAGES` passages is scored by
- its overlap with the question's content words: stemmed terms (the collection's BM25 analyser),
  each weighed by how rare it is among these sentences, and word prefixes (a stem the analyser
  splits, "Europe" / "European", "Frankfurt" / "Francoforte" aside);
- the words of the heading it stands under (a FAQ's question), at half weight;
- what the question asks for: a number, a date, a name ("how many", "cuándo", "chi") counts in a
  sentence that has one the question does not;
- where it is: its passage's rank, then its place in the passage;
- with `similarity` (the collection's `llm.extractive_scorer: semantic`), its meaning, where the
  above leaves the answer open (no sentence holds it with SURE): the MEANING_CANDIDATES best are
  embedded by the collection's model, and their cosine to the question, standardised among them,
  is added at MEANING (the others are not quoted).
The scores become likelihoods (their softmax at TEMPERATURE) and sentences are quoted, likeliest
first, until those quoted hold the answer with CONFIDENCE, so an answer is longer only where the
passages leave it open. A heading is never quoted (it names the topic); a FAQ question is quoted
with its answer.
"""

from __future__ import annotations

import itertools
import logging
import math
import re
import statistics
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag_api.embedding.bm25 import SparseEncoder
from rag_api.llm.prompts import Cited, pack
from rag_api.llm.sentences import split_sentences

MAX_PASSAGES = 3  # passages whose sentences are candidates
MAX_CANDIDATES = 40  # sentences scored at most, the best passages' first
# weights beside the words' 0.8: the heading's words, each kind of answer asked for, a passage rank
HEADING, ASKED, RANK = 0.4, 0.12, 0.16
# sentences are quoted, likeliest first, until their likelihoods (the scores' softmax at
# TEMPERATURE) add up to CONFIDENCE, MAX_QUOTED at most; chosen on bench_extractive's tuning
# questions (docs/performance.md)
TEMPERATURE, CONFIDENCE, MAX_QUOTED = 12.4, 0.68, 3
# scored by meaning too: the weight of the standardised cosine and how many sentences are embedded,
# then the softmax's temperature and the confidence for those scores; chosen the same way
MEANING, MEANING_CANDIDATES = 0.1, 12
MEANING_TEMPERATURE, MEANING_CONFIDENCE = 8.25, 0.74
# ... asked only where the words leave the answer open: their likeliest sentence below SURE (the
# lowest whose tuning figures equal asking every answer's; about half the answers embed nothing)
SURE = 0.85

# the cosines of texts to the question, by the collection's embedding model
Similarity = Callable[[list[str]], Sequence[float]]

log = logging.getLogger(__name__)

_WORD = re.compile(r"\w+")
_NUMBER = re.compile(r"\d")
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
# what a question asks for, by its first words (lower case, accents kept)
_ASKS = {
    "number": re.compile(
        r"\b(how (many|much|long|often|old|far|soon|big|large|fast)|what (percentage|share|number)"
        r"|cu[aá]nt[oa]s?|qu[eé] (porcentaje|n[uú]mero|cantidad)|quant[oiae]|che percentuale)\b"
    ),
    "date": re.compile(
        r"\b(when|what year|which year|cu[aá]ndo|qu[eé] a[nñ]o|quando|che anno|quale anno)\b"
    ),
    "name": re.compile(
        r"\b(who|whom|whose|which|where|qui[eé]n(es)?|cu[aá]l(es)?|d[oó]nde|chi|quale|quali|dove)\b"
    ),
}
_NUMBER_WORDS = set(
    "one two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty "
    "hundred thousand million billion dozen half "
    "uno una dos tres cuatro cinco seis siete ocho nueve diez once doce veinte treinta cuarenta "
    "cincuenta cien ciento mil millón millones "
    "due tre quattro cinque sei sette otto nove dieci undici dodici venti trenta quaranta "
    "cinquanta cento mille milione milioni".split()
)
_MONTHS = set(
    "january february march april may june july august september october november december "
    "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre "
    "gennaio febbraio aprile maggio giugno luglio settembre ottobre dicembre".split()
)


@dataclass
class Candidate:
    n: int  # the passage's number, from 1 (its citation)
    position: int  # the sentence's place in the passage
    text: str  # what is quoted: the sentence (a FAQ question with its answer)
    heading: str = ""  # the heading it stands under in its passage (its section's topic)
    score: float = 0.0


def extractive_answer(
    question: str,
    passages: Sequence[Cited],
    language: str,
    encoder: SparseEncoder,
    *,
    fallback: bool = False,
    similarity: Similarity | None = None,
) -> str:
    """The answer without an LLM: the best sentences, each cited [n], under a header that says a
    configured LLM failed only when `fallback`; scored by meaning too with `similarity`."""
    chosen = select(question, passages, encoder, similarity)
    language_pack = pack(language)
    header = language_pack.extractive_fallback if fallback else language_pack.extractive
    quotes = [  # one quote a passage: its sentences in order, cited once
        f"- {' '.join(c.text for c in group)} [{n}]"
        for n, group in itertools.groupby(chosen, key=lambda c: c.n)
    ]
    return header + "\n" + "\n".join(quotes)


def select(
    question: str,
    passages: Sequence[Cited],
    encoder: SparseEncoder,
    similarity: Similarity | None = None,
) -> list[Candidate]:
    """The likeliest sentences until they hold the answer with CONFIDENCE; in the passages'
    order. With `similarity`, scored by meaning too; should it fail, by words alone."""
    candidates = candidates_of(passages[:MAX_PASSAGES])
    if not candidates:
        return []
    score(question, candidates, encoder)
    if similarity is not None and max(likelihoods(candidates)) < SURE:
        try:
            best = add_meaning(candidates, similarity)
        except Exception as exc:  # the answer of last resort: it answers by words alone
            log.warning("sentences not scored by meaning (%s); by their words alone", exc)
        else:
            return select_from(best, MEANING_TEMPERATURE, MEANING_CONFIDENCE)
    return select_from(candidates)


def add_meaning(candidates: Sequence[Candidate], similarity: Similarity) -> list[Candidate]:
    """The MEANING_CANDIDATES best candidates, each score raised by MEANING times the sentence's
    cosine to the question standardised among them (a model's cosines have a scale of their
    own: e5's lie within 0.7-0.9)."""
    best = sorted(candidates, key=lambda c: (-c.score, c.n, c.position))[:MEANING_CANDIDATES]
    cosines = [float(c) for c in similarity([c.text for c in best])]
    if len(cosines) != len(best):  # checked before any score moves: words alone stay intact
        raise ValueError(f"{len(cosines)} cosines for {len(best)} sentences")
    mean, spread = statistics.fmean(cosines), statistics.pstdev(cosines) or 1.0
    for candidate, cosine in zip(best, cosines, strict=True):
        candidate.score += MEANING * (cosine - mean) / spread
    return best


def select_from(
    candidates: Sequence[Candidate],
    temperature: float | None = None,
    confidence: float | None = None,
) -> list[Candidate]:
    """Of scored candidates, the likeliest until they hold the answer with `confidence`
    (CONFIDENCE; at most MAX_QUOTED; one that another holds is not quoted again), in the
    passages' order."""
    confidence = CONFIDENCE if confidence is None else confidence
    ranked = sorted(candidates, key=lambda c: (-c.score, c.n, c.position))
    chosen: list[Candidate] = []
    held = 0.0
    for candidate, likelihood in zip(ranked, likelihoods(ranked, temperature), strict=True):
        if len(chosen) == MAX_QUOTED or (chosen and held >= confidence):
            break
        held += likelihood  # a sentence already quoted inside another counts, once
        if not any(candidate.text in c.text or c.text in candidate.text for c in chosen):
            chosen.append(candidate)
    return sorted(chosen, key=lambda c: (c.n, c.position))


def likelihoods(candidates: Sequence[Candidate], temperature: float | None = None) -> list[float]:
    """How likely each candidate holds the answer: the softmax of their scores at `temperature`
    (TEMPERATURE)."""
    temperature = TEMPERATURE if temperature is None else temperature
    top = max(c.score for c in candidates)
    weights = [math.exp(temperature * (c.score - top)) for c in candidates]
    total = sum(weights)
    return [w / total for w in weights]


def candidates_of(passages: Sequence[Cited]) -> list[Candidate]:
    """The quotable sentences of `passages`: no headings; a question with what answers it."""
    out: list[Candidate] = []
    for n, passage in enumerate(passages, 1):
        sentences = split_sentences(passage.text)
        heading = ""
        for i, sentence in enumerate(sentences):
            if sentence.heading:
                heading = sentence.text
                continue
            text = sentence.text
            if text.endswith("?"):  # a FAQ's question: quoted with what answers it
                for following in sentences[i + 1 :]:
                    if following.heading or len(text) >= 80:
                        break
                    text = f"{text} {following.text}"
            out.append(Candidate(n, sentence.position, text, heading))
    return out[:MAX_CANDIDATES]


def score(question: str, candidates: list[Candidate], encoder: SparseEncoder) -> None:
    wanted = _features(question, encoder)
    found = [_features(c.text, encoder) & wanted for c in candidates]
    # a sentence under a heading that matches the question answers it more likely (a FAQ)
    under = [(_features(c.heading, encoder) & wanted) - found[i] for i, c in enumerate(candidates)]
    df = Counter(f for features in found for f in features)
    weight = {f: _idf(len(candidates), df[f]) for f in wanted}
    total = sum(weight.values()) or 1.0
    asked_words = {w.lower() for w in _WORD.findall(question)}
    asks = {kind for kind, cue in _ASKS.items() if cue.search(question.lower())}
    for i, candidate in enumerate(candidates):
        value = 0.8 * sum(weight[f] for f in found[i]) / total
        value += HEADING * sum(weight.get(f, 0.0) for f in under[i]) / total
        value += ASKED * len(asks & _holds(candidate.text, asked_words))
        value -= RANK * (candidate.n - 1) + 0.005 * min(candidate.position, 10)
        candidate.score = value


def _idf(n: int, df: int) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def _fold(word: str) -> str:
    decomposed = unicodedata.normalize("NFKD", word.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _features(text: str, encoder: SparseEncoder) -> set[int | str]:
    """What a sentence and the question can share: the analyser's stemmed terms, and the first
    five letters of each word of four or more (a stem the analyser splits)."""
    prefixes = {_fold(w)[:5] for w in _WORD.findall(text) if len(w) >= 4 and not w.isdigit()}
    return encoder.terms(text) | prefixes


def _holds(text: str, asked_words: set[str]) -> set[str]:
    """What kinds of answer `text` holds that the question does not: number, date, name."""
    kinds: set[str] = set()
    words = _WORD.findall(text)
    new = [w for w in words if w.lower() not in asked_words]
    if any(_NUMBER.search(w) or w.lower() in _NUMBER_WORDS for w in new):
        kinds.add("number")
    if any(_YEAR.fullmatch(w) or w.lower() in _MONTHS for w in new):
        kinds.add("date")
    if any(w[0].isupper() for w in new if w != words[0]):  # a sentence's first word: capitalised
        kinds.add("name")
    return kinds
