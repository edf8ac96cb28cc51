"""GET /v1/collections/{c}/files (index states), DELETE and download of a kb file, on a live hub
over the embedded store; and an upload beside a watcher in the same process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rag_api.indexing.sync import file_scope, sync_collection
from rag_api.store import Selector
from tests.conftest import assert_error_shape, wait_for
from tests.indexing.test_formats import write_pdf
from tests.uploads.conftest import file_states, finished, upload

GUIDE = b"# Warranty\n\nThe heat pump carries a five year warranty on the compressor.\n"


def test_states_follow_the_folder_and_the_store(start, kb: Path) -> None:
    server = start()
    collection = server.hub.collection("docs")
    with server.client() as http:
        assert file_states(http)["faq.md"]["state"] == "pending"  # nobody indexed the folder
        job = finished(http, upload(http, [("guide.md", GUIDE)], folder="manuals").json()["id"])
        sync_collection(collection, only=["faq.md"])
        states = file_states(http)
        assert set(states) == {"faq.md", "manuals/guide.md"}
        guide = states["manuals/guide.md"]
        assert guide["state"] == "indexed" and guide["reason"] is None
        assert guide["chunks"] == job["files"][0]["chunks"] and guide["size"] == len(GUIDE)
        assert guide["modified"].endswith("+00:00")

        # edited on disk, nobody re-indexed it: stale, with the chunks of the old version
        (kb / "manuals/guide.md").write_bytes(GUIDE + b"\nAnd the fan has two years.\n")
        states = file_states(http)
        assert states["manuals/guide.md"]["state"] == "stale"
        assert states["manuals/guide.md"]["reason"] == "the file changed since it was indexed"
        assert states["manuals/guide.md"]["chunks"] == guide["chunks"]
        assert states["faq.md"]["state"] == "indexed"

        # a file too large for the indexer, and one it ignores (not listed)
        (kb / "huge.md").write_bytes(b"x" * (server.hub.settings.max_file_bytes + 1))
        (kb / "clip.mp4").write_bytes(b"\x00\x00")
        huge = file_states(http)["huge.md"]
        assert huge["state"] == "failed" and "byte limit" in huge["reason"]
        assert "clip.mp4" not in file_states(http)


@pytest.mark.slow
def test_a_file_whose_chunks_were_edited_or_removed_is_stale(start, kb: Path) -> None:
    server = start()
    collection = server.hub.collection("docs")
    long_text = "\n\n".join(f"Paragraph {n} about pumps and valves." * 3 for n in range(6))
    (kb / "long.md").write_text(long_text)
    sync_collection(collection, only=["long.md"])
    with server.client() as http:
        assert file_states(http)["long.md"]["state"] == "indexed"
        edit = {"source": "long.md", "chunk_index": 1, "new_text": "Pumps are blue."}
        assert http.post("/v1/rag/chunks/update", json=edit).status_code == 200
        long = file_states(http)["long.md"]
        assert long["state"] == "stale" and "edited through the API" in long["reason"]
        first = collection.records(file_scope(["long.md"]), limit=1)[0]
        collection.delete(Selector(ids=(first.id,)))
        long = file_states(http)["long.md"]
        assert long["state"] == "stale" and "chunks are missing" in long["reason"]


def test_delete_removes_the_file_and_its_chunks(start, kb: Path) -> None:
    server = start()
    collection = server.hub.collection("docs")
    with server.client() as http:
        answer = upload(http, [("guide.md", GUIDE), ("keep.md", b"Keep me.")])
        job = finished(http, answer.json()["id"])
        chunks = job["files"][0]["chunks"]
        assert collection.count(file_scope(["guide.md"])) == chunks > 0
        answer = http.delete("/v1/collections/docs/files/guide.md")
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"deleted": "guide.md", "chunks_removed": chunks}
        assert not (kb / "guide.md").exists()
        assert collection.count(file_scope(["guide.md"])) == 0
        assert collection.count(file_scope(["keep.md"])) == 1
        hits = http.post("/v1/rag/search", json={"query": "compressor warranty"}).json()
        assert "guide.md" not in {h["source"] for h in hits["results"]}
        assert "guide.md" not in file_states(http)

        for path, allowed in (("/files/guide.md", "DELETE, GET"), ("/files", "GET, POST")):
            wrong = http.put("/v1/collections/docs" + path)  # Allow: every method of the path
            assert_error_shape(wrong, 405, "METHOD_NOT_ALLOWED")
            assert wrong.headers["allow"] == allowed

        again = http.delete("/v1/collections/docs/files/guide.md")
        assert "guide.md" in assert_error_shape(again, 404, "FILE_NOT_FOUND")["message"]
        escape = http.delete("/v1/collections/docs/files/..%2Ffaq.md")
        assert_error_shape(escape, 404, "FILE_NOT_FOUND")
        assert (kb / "faq.md").exists()

        # removed from the folder by hand, its chunks still stored: DELETE removes them
        (kb / "keep.md").unlink()
        gone = http.delete("/v1/collections/docs/files/keep.md").json()
        assert gone == {"deleted": "keep.md", "chunks_removed": 1}


def test_download_gives_the_original(start, kb: Path, tmp_path: Path) -> None:
    server = start()
    pdf = tmp_path / "manual.pdf"
    write_pdf(pdf, ["The heat pump needs defrosting in winter."])
    outside = tmp_path / "secret.md"
    outside.write_text("not in the kb")
    (kb / "linked").symlink_to(tmp_path)
    with server.client() as http:
        job = upload(http, [("manual.pdf", pdf.read_bytes())], folder="docs").json()
        answer = http.get("/v1/collections/docs/files/docs/manual.pdf")
        assert answer.status_code == 200 and answer.content == pdf.read_bytes()
        assert 'filename="manual.pdf"' in answer.headers["content-disposition"]
        finished(http, job["id"])
        for path in ("nope.md", "..%2Fsecret.md", "linked/secret.md", ".hidden.md", "docs"):
            assert_error_shape(
                http.get(f"/v1/collections/docs/files/{path}"), 404, "FILE_NOT_FOUND"
            )
        # an encoded line break reaches the route like any name (it was a "no route" 404): inside
        # a name it is a character no file name holds, around one a blank an upload drops too
        broken = http.get("/v1/collections/docs/files/a%0D%0Ab.md")
        assert "cannot hold" in assert_error_shape(broken, 404, "FILE_NOT_FOUND")["message"]
        assert http.get("/v1/collections/docs/files/faq.md%0A").text == (kb / "faq.md").read_text()
        assert_error_shape(http.get("/v1/collections/notes/files/a.md"), 409, "NO_KB_FOLDER")


def test_an_upload_beside_a_watcher_is_embedded_once(start, kb: Path) -> None:
    """The watcher sees the uploaded file too; whichever of the two indexes it first, the other
    finds its content stored and embeds nothing: the chunks are embedded exactly once."""
    server = start(watch=True, watch_debounce_s=0.3)
    watcher = server.hub.watcher
    counters = lambda: watcher.status()["collections"]["docs"]["counters"]  # noqa: E731
    state = lambda: watcher.status()["collections"]["docs"]  # noqa: E731
    docs = server.hub.collection("docs")
    # the kb's own file indexed and the watcher idle first: its embeds are not the upload's
    wait_for(lambda: counters()["reconciles"] >= 1 and docs.count(file_scope(["faq.md"])) > 0)
    wait_for(lambda: state()["queue"] == 0 and not state()["busy"])
    before = counters()["chunks_embedded"]
    with server.client() as http:
        job = finished(http, upload(http, [("guide.md", GUIDE + GUIDE)]).json()["id"])
        item = job["files"][0]
        wait_for(lambda: state()["files"] == 2 and state()["queue"] == 0 and not state()["busy"])
        by_watcher = counters()["chunks_embedded"] - before
        assert item["embedded"] + by_watcher == item["chunks"]
        assert docs.count(file_scope(["guide.md"])) == item["chunks"]
        assert file_states(http)["guide.md"]["state"] == "indexed"


def test_a_file_the_watcher_could_not_read_is_failed_with_its_reason(start, kb: Path) -> None:
    server = start(watch=True, watch_debounce_s=0.2)
    (kb / "scan.pdf").write_bytes(b"%PDF-1.4\nnot really")
    os.utime(kb / "scan.pdf")
    watcher = server.hub.watcher
    wait_for(lambda: "scan.pdf" in watcher.status()["collections"]["docs"]["bad_files"])
    with server.client() as http:
        scan = file_states(http)["scan.pdf"]
        assert scan["state"] == "failed" and "unreadable PDF" in scan["reason"]
