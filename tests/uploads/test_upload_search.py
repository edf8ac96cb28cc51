"""An uploaded markdown file and PDF, embedded by the bundled MiniLM model on the embedded store,
answer questions as the first source."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import minilm_collection, write_config
from tests.indexing.test_formats import write_pdf
from tests.uploads.conftest import file_states, finished, upload

POLICY = b"""# Travel policy

## Hotels

Employees may book hotels up to 180 euros a night in capital cities.

## Trains

Train journeys over four hours may be booked in first class.
"""
PDF_PAGES = [
    "The greenhouse irrigation valve must be flushed every spring.\n"
    "Flushing removes the limestone that blocks the drip lines.",
    "The ventilation fans are replaced every eight years.",
]


def test_uploaded_md_and_pdf_are_searchable(tmp_path: Path, make_settings, serve) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    config = write_config(tmp_path / "c.yaml", {"docs": minilm_collection(kb)})
    server = serve(make_settings(config))
    pdf = tmp_path / "greenhouse.pdf"
    write_pdf(pdf, PDF_PAGES)
    with server.client() as http:
        answer = upload(http, [("policy.md", POLICY), ("greenhouse.pdf", pdf.read_bytes())])
        assert answer.status_code == 202, answer.text
        job = finished(http, answer.json()["id"], timeout=180)
        assert job["status"] == "done", job
        policy, greenhouse = job["files"]
        assert policy["chunks"] >= 1 and greenhouse["chunks"] == 2  # a chunk a page
        assert greenhouse["embedded"] == greenhouse["chunks"]
        states = file_states(http)
        assert {p: s["state"] for p, s in states.items()} == {
            "greenhouse.pdf": "indexed",
            "policy.md": "indexed",
        }

        def first_source(question: str) -> dict:
            body = {"query": question, "generate": False, "threshold": 0.0}
            reply = http.post("/query/docs", json=body)
            assert reply.status_code == 200, reply.text
            return reply.json()["sources"][0]

        valve = first_source("How often should the irrigation valve be flushed?")
        assert valve["source"] == "greenhouse.pdf" and valve["metadata"] == {"page": 1}
        assert "flushed every spring" in valve["text"]
        hotel = first_source("What is the hotel budget per night in a capital?")
        assert hotel["source"] == "policy.md" and "180 euros" in hotel["text"]
