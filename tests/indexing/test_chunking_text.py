"""Plain text is cut between paragraphs first, so an edit re-chunks only its neighbourhood."""

from __future__ import annotations

from rag_api.config import ChunkingConfig
from rag_api.indexing.chunking import split_text

CHUNKING = ChunkingConfig(size=200, overlap=20)
WORDS = "the pump valve filter seal hose tank gauge motor belt drain inlet".split()


def sentence(k: int) -> str:
    return " ".join(WORDS[(k * 5 + i) % 12] for i in range(4 + (k * 7) % 11)).capitalize() + "."


# 24 paragraphs of 2-4 sentences of varied length (one splitter pass over it all used to cascade:
# an edit here changed up to 14 of its 21 chunks)
PARAGRAPHS = [" ".join(sentence(n * 4 + j) for j in range(2 + n % 3)) for n in range(24)]


def test_paragraphs_are_packed_whole_up_to_the_size() -> None:
    chunks = split_text("\n\n".join(PARAGRAPHS), CHUNKING)
    assert all(len(chunk) <= CHUNKING.size for chunk in chunks)
    fitting = [p for p in PARAGRAPHS if len(p) <= CHUNKING.size]
    assert len(fitting) > 15
    for paragraph in fitting:  # whole, in exactly one chunk: no cut inside, no overlap copies
        assert sum(paragraph in chunk for chunk in chunks) == 1


def test_an_edit_changes_only_the_chunk_holding_it() -> None:
    before = split_text("\n\n".join(PARAGRAPHS), CHUNKING)
    for n in range(len(PARAGRAPHS)):
        edited = list(PARAGRAPHS)
        edited[n] += " One more short sentence."
        after = split_text("\n\n".join(edited), CHUNKING)
        assert len([chunk for chunk in after if chunk not in before]) <= 2, n


def test_a_paragraph_longer_than_the_size_is_split_with_overlap() -> None:
    long = " ".join(f"Sentence {n} is in the long paragraph." for n in range(20))
    intro = "An introduction of a few words, long enough to stand as its own paragraph."
    chunks = split_text(f"{intro}\n\n{long}\n\nShort outro.", CHUNKING)
    assert chunks[0] == intro and chunks[-1] == "Short outro."
    middle = chunks[1:-1]
    assert len(middle) > 1 and all(len(chunk) <= CHUNKING.size for chunk in middle)
    assert middle[0].split()[-1] in middle[1] or middle[1].split()[0] in middle[0]


def test_a_title_line_travels_with_its_paragraph() -> None:
    """A short lead (a title) is not a chunk of its own, even before a paragraph too long to join:
    alone it would match little and its paragraph's chunks would lose it."""
    long = " ".join(f"Sentence {n} is in the long paragraph." for n in range(20))
    chunks = split_text(f"Pump maintenance\n\n{long}", CHUNKING)
    assert chunks[0].startswith("Pump maintenance\n\nSentence 0 ")
    assert all(len(chunk) <= CHUNKING.size for chunk in chunks)
    fits = split_text("Pump maintenance\n\nCheck the seal weekly.", CHUNKING)
    assert fits == ["Pump maintenance\n\nCheck the seal weekly."]
