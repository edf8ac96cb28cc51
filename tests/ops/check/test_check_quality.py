"""rag-hub check's quality finding, on both engines: a kb file whose labelled chunks are mostly
below the collection's min_quality is reported (a warning: the check still passes) with the most
common reasons; a file with a few low chunks, or unlabelled, is not."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rag_api.hub import Hub
from rag_api.indexing.sync import sync_collection
from rag_api.ops.check.findings import render_text
from rag_api.ops.check.run import run_check
from tests.conftest import hash_collection, write_config
from tests.ops.check.test_check import make_kb
from tests.support.labels import label_file

REASONS = ("broken_extraction", "low_ocr_confidence")


@pytest.fixture
def labelled(tmp_path, make_settings, open_hub, engine) -> Callable[..., tuple[Hub, int]]:
    """(hub, chunks of guide.md): guide.md all but one chunk of quality 0.1, faq.txt one such
    chunk, notes.jsonl never labelled; `retrieval` overrides the collection's."""

    def build(**retrieval: float) -> tuple[Hub, int]:
        kb = make_kb(tmp_path)
        entry = hash_collection(kb, retrieval=retrieval)
        config = write_config(tmp_path / "collections.yaml", {"docs": entry})
        hub = open_hub(make_settings(config, engine))
        docs = hub.collection("docs")
        sync_collection(docs)
        guide = label_file(docs, "guide.md", 0)
        assert guide >= 3
        label_file(docs, "guide.md", guide - 1, *REASONS)
        label_file(docs, "faq.txt", 1, "too_short")
        return hub, guide

    return build


def test_a_file_of_mostly_low_quality_chunks_is_a_warning(labelled) -> None:
    hub, guide = labelled()
    document = run_check(hub, sample=4).as_dict()
    assert document["exit_code"] == 0 and document["status"] == "healthy"
    (finding,) = document["findings"]
    assert (finding["check"], finding["subject"], finding["severity"]) == (
        "quality",
        "guide.md",
        "warning",
    )
    assert not finding["repairable"]
    assert finding["detail"] == (
        f"guide.md: {guide - 1} of {guide} chunks below quality 0.3 "
        "(broken_extraction, low_ocr_confidence) — this file extracted as garbage; "
        "searches leave those chunks out"
    )
    assert f"warning quality: {finding['detail']}" in render_text(document)


def test_the_collection_s_min_quality_decides(labelled) -> None:
    hub, _ = labelled(min_quality=0.05)
    assert run_check(hub, sample=0).as_dict()["findings"] == []
