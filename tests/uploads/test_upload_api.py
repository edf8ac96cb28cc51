"""POST /v1/collections/{c}/files and /v1/jobs on a live hub (embedded store, hash embedder):
the job's life, every refusal in the one error shape with nothing written, the bounded queue."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from rag_api.indexing.sync import file_scope
from tests.conftest import assert_error_shape, hash_collection, wait_for, write_config
from tests.uploads.conftest import ADMIN, READER, file_states, finished, upload

GUIDE = (
    b"# Warranty\n\nThe heat pump carries a five year warranty on the compressor.\n\n"
    b"# Service\n\nA technician visits within two working days of a service call.\n"
)


def test_an_upload_answers_202_with_a_job_that_ends_indexed(start, kb: Path) -> None:
    server = start()
    with server.client() as http:
        answer = upload(http, [("guide.md", GUIDE), ("more notes.txt", b"Filters last a year.")])
        assert answer.status_code == 202, answer.text
        job = answer.json()
        assert answer.headers["location"] == f"/v1/jobs/{job['id']}"
        assert job["collection"] == "docs" and job["status"] in ("queued", "indexing", "done")
        assert [(f["path"], f["size"]) for f in job["files"]] == [
            ("guide.md", len(GUIDE)),
            ("more notes.txt", 20),
        ]
        assert (kb / "guide.md").read_bytes() == GUIDE  # the original, byte for byte

        done = finished(http, job["id"])
        assert done["status"] == "done" and done["finished_at"] >= done["created_at"]
        guide, notes = done["files"]
        stored = server.hub.collection("docs").count(file_scope(["guide.md"]))
        assert guide == {
            "path": "guide.md",
            "size": len(GUIDE),
            "status": "done",
            "chunks": stored,
            "embedded": stored,
            "skipped": 0,
            "error": None,
            "progress": None,
        }
        assert stored >= 2 and notes["chunks"] == 1

        listed = http.get("/v1/jobs").json()["jobs"]
        assert [j["id"] for j in listed] == [job["id"]] and listed[0] == done
        sources = http.post("/v1/rag/search", json={"query": "compressor warranty"}).json()
        assert sources["results"][0]["source"] == "guide.md"


def test_a_sub_folder_and_an_overwrite(start, kb: Path) -> None:
    server = start()
    with server.client() as http:
        first = upload(http, [("guide.md", GUIDE)], folder="manuals/2026")
        assert first.json()["files"][0]["path"] == "manuals/2026/guide.md"
        assert finished(http, first.json()["id"])["status"] == "done"

        again = upload(http, [("guide.md", b"# Warranty\n\nTen years.")], folder="manuals/2026")
        error = assert_error_shape(again, 409, "FILE_EXISTS")
        assert "manuals/2026/guide.md" in error["message"] and "overwrite=true" in error["message"]
        assert (kb / "manuals/2026/guide.md").read_bytes() == GUIDE

        new = b"# Warranty\n\nTen years on everything."
        replaced = upload(http, [("guide.md", new)], folder="manuals/2026", overwrite="true")
        assert replaced.status_code == 202, replaced.text
        job = finished(http, replaced.json()["id"])
        assert job["files"][0]["chunks"] == 1 and job["files"][0]["status"] == "done"
        assert (kb / "manuals/2026/guide.md").read_bytes() == new
        hits = http.post("/v1/rag/search", json={"query": "ten years"}).json()["results"]
        texts = [h["text"] for h in hits if h["source"] == "manuals/2026/guide.md"]
        assert len(texts) == 1 and "Ten years on everything" in texts[0]


def test_the_same_file_twice_embeds_nothing_the_second_time(start) -> None:
    server = start()
    with server.client() as http:
        first = finished(http, upload(http, [("guide.md", GUIDE)]).json()["id"])
        again = upload(http, [("guide.md", GUIDE)], overwrite="true")
        second = finished(http, again.json()["id"])
        chunks = first["files"][0]["chunks"]
        assert first["files"][0]["embedded"] == chunks
        assert second["files"][0] | {"size": 0} == {
            "path": "guide.md",
            "size": 0,
            "status": "done",
            "chunks": chunks,
            "embedded": 0,
            "skipped": chunks,
            "error": None,
            "progress": None,
        }


def test_a_file_that_cannot_be_read_fails_its_job_with_the_reason(start, kb: Path) -> None:
    server = start()
    with server.client() as http:
        answer = upload(http, [("broken.pdf", b"%PDF-1.4\nnot really"), ("ok.md", GUIDE)])
        job = finished(http, answer.json()["id"])
        assert job["status"] == "failed"
        broken, ok = job["files"]
        assert broken["status"] == "failed" and "unreadable PDF" in broken["error"]
        assert broken["chunks"] is None and ok["status"] == "done"
        states = file_states(http)
        assert states["broken.pdf"]["state"] == "failed"
        assert "unreadable PDF" in states["broken.pdf"]["reason"]
        assert states["ok.md"]["state"] == "indexed"


@pytest.mark.parametrize(
    ("filename", "folder", "said"),
    [
        ("../escape.md", None, "leaves the kb folder"),
        ("guide.md", "../outside", "leaves the kb folder"),
        ("guide.md", "a/../../b", "leaves the kb folder"),
        ("/etc/guide.md", None, "is absolute"),
        ("guide.md", "/tmp", "is absolute"),
        ("..\\..\\guide.md", None, "backslash"),
        (".hidden.md", None, "hidden"),
        ("guide.md", ".git", "hidden"),
        ("_generated.md", None, "generated"),
        ("guide.md~", None, "cannot be indexed"),
        ("CON.md", None, "reserved device name"),
        ("what?.md", None, "cannot hold"),
        ("a|b.md", "x", "cannot hold"),
        ("./", None, "names no file"),
    ],
)
def test_unsafe_names_are_refused_and_nothing_is_written(
    start, kb: Path, tmp_path: Path, filename: str, folder: str | None, said: str
) -> None:
    server = start()
    before = sorted(p for p in tmp_path.rglob("*") if "data" not in p.parts)
    with server.client() as http:
        form = {"folder": folder} if folder else {}
        answer = upload(http, [("fine.md", GUIDE), (filename, GUIDE)], **form)
        status = 415 if said == "cannot be indexed" else 422
        code = "UNSUPPORTED_FILE_TYPE" if status == 415 else "INVALID_REQUEST"
        assert said in assert_error_shape(answer, status, code)["message"]
        assert http.get("/v1/jobs").json() == {"jobs": []}
    assert sorted(p for p in tmp_path.rglob("*") if "data" not in p.parts) == before


def test_an_unsupported_type_is_415_naming_it(start, kb: Path) -> None:
    server = start()
    with server.client() as http:
        answer = upload(http, [("clip.mp4", b"\x00\x00\x00"), ("notes", b"x")])
        message = assert_error_shape(answer, 415, "UNSUPPORTED_FILE_TYPE")["message"]
        assert "'clip.mp4'" in message and "'.mp4'" in message and ".pdf" in message
        bare = assert_error_shape(upload(http, [("notes", b"x")]), 415, "UNSUPPORTED_FILE_TYPE")
        assert "without an extension" in bare["message"]
    assert not (kb / "clip.mp4").exists()


def test_size_and_count_limits_are_413(start, kb: Path) -> None:
    server = start(max_file_bytes=1000, upload_max_bytes=4000, upload_max_files=5)
    with server.client() as http:
        big = upload(http, [("ok.md", b"a" * 10), ("big.md", b"b" * 1001)])
        assert (
            "'big.md' has 1001 bytes"
            in assert_error_shape(big, 413, "PAYLOAD_TOO_LARGE")["message"]
        )
        request = upload(http, [(f"f{n}.md", b"c" * 900) for n in range(3)])
        assert request.status_code == 202  # 2700 bytes of files and their headers fit in 4000
        finished(http, request.json()["id"])
        over = upload(http, [(f"g{n}.md", b"c" * 999) for n in range(4)])
        message = assert_error_shape(over, 413, "PAYLOAD_TOO_LARGE")["message"]
        assert "4000 byte limit" in message
        many = upload(http, [(f"h{n}.md", b"d") for n in range(6)])
        message = assert_error_shape(many, 413, "PAYLOAD_TOO_LARGE")["message"]
        assert "RAG_UPLOAD_MAX_FILES" in message
    assert sorted(p.name for p in kb.iterdir()) == ["f0.md", "f1.md", "f2.md", "faq.md"]


def test_other_refusals(start, kb: Path) -> None:
    server = start()
    with server.client() as http:
        assert_error_shape(upload(http, [("a.md", b"x")], "nope"), 404, "COLLECTION_NOT_FOUND")
        no_kb = assert_error_shape(upload(http, [("a.md", b"x")], "notes"), 409, "NO_KB_FOLDER")
        assert "no kb folder" in no_kb["message"]
        none = http.post("/v1/collections/docs/files", files=[("other", ("a.md", b"x"))])
        assert "at least one file" in assert_error_shape(none, 422, "INVALID_REQUEST")["message"]
        text = http.post("/v1/collections/docs/files", data={"files": "not a file"})
        assert_error_shape(text, 422, "INVALID_REQUEST")
        twice = upload(http, [("a.md", b"x"), ("./a.md", b"y")])
        assert "given twice" in assert_error_shape(twice, 422, "INVALID_REQUEST")["message"]
        for loose in ("maybe", "yes", "1", "on", ""):  # true or false, as in a JSON body
            flag = upload(http, [("a.md", b"x")], overwrite=loose)
            error = assert_error_shape(flag, 422, "INVALID_REQUEST")
            assert error["message"].startswith("overwrite: must be true or false"), error
        (kb / "dir.md").mkdir()
        assert_error_shape(upload(http, [("dir.md", b"x")]), 422, "INVALID_REQUEST")
        unknown = assert_error_shape(http.get("/v1/jobs/0123abcd"), 404, "JOB_NOT_FOUND")
        assert "RAG_UPLOAD_HISTORY" in unknown["message"]
    assert sorted(p.name for p in kb.iterdir()) == ["dir.md", "faq.md"]


def test_writes_need_the_admin_key_and_reads_the_reader_key(start, kb: Path) -> None:
    server = start(api_key=READER, admin_api_key=ADMIN)
    admin = {"Authorization": f"Bearer {ADMIN}"}
    reader = {"Authorization": f"Bearer {READER}"}
    with server.client() as http:
        assert_error_shape(upload(http, [("a.md", GUIDE)]), 401, "UNAUTHORIZED")
        with server.client(headers=reader) as as_reader:
            refused = assert_error_shape(upload(as_reader, [("a.md", GUIDE)]), 403, "FORBIDDEN")
            assert "RAG_ADMIN_API_KEY" in refused["message"]
        assert not (kb / "a.md").exists()
        with server.client(headers=admin) as as_admin:
            job = upload(as_admin, [("a.md", GUIDE)]).json()
        for path in ("/v1/jobs", f"/v1/jobs/{job['id']}", "/v1/collections/docs/files"):
            assert_error_shape(http.get(path), 401, "UNAUTHORIZED")
            assert http.get(path, headers=reader).status_code == 200
        assert http.get("/v1/collections/docs/files/a.md", headers=reader).content == GUIDE
        assert_error_shape(http.get("/v1/collections/docs/files/a.md"), 401, "UNAUTHORIZED")
        assert_error_shape(
            http.delete("/v1/collections/docs/files/a.md", headers=reader), 403, "FORBIDDEN"
        )
        assert (kb / "a.md").exists()


def test_a_full_queue_answers_429_with_retry_after_and_writes_nothing(start, kb: Path) -> None:
    """One job indexing (held at the collection's write lock, as a migration's swap holds it),
    one waiting in a queue of one: the third request is refused; then all drain."""
    server = start(upload_queue=1)
    collection = server.hub.collection("docs")
    held, release = threading.Event(), threading.Event()

    def hold_writes() -> None:
        with collection.writes_held():
            held.set()
            release.wait(60)

    holder = threading.Thread(target=hold_writes)
    holder.start()
    try:
        held.wait(10)
        with server.client() as http:
            first = upload(http, [("one.md", GUIDE)]).json()
            wait_for(lambda: http.get(f"/v1/jobs/{first['id']}").json()["status"] == "indexing")
            second = upload(http, [("two.md", GUIDE)])
            assert second.status_code == 202 and second.json()["status"] == "queued"
            third = upload(http, [("three.md", GUIDE)])
            message = assert_error_shape(third, 429, "QUEUE_FULL")["message"]
            assert "RAG_UPLOAD_QUEUE" in message and "nothing was written" in message
            assert int(third.headers["retry-after"]) >= 1
            assert not (kb / "three.md").exists()
            assert len(http.get("/v1/jobs").json()["jobs"]) == 2
    finally:
        release.set()
        holder.join()
    with server.client() as http:
        assert finished(http, first["id"])["status"] == "done"
        assert finished(http, second.json()["id"])["status"] == "done"
        assert upload(http, [("three.md", GUIDE)]).status_code == 202


def test_jobs_outlive_a_restart_and_one_cut_short_runs_again(
    start, kb: Path, tmp_path: Path
) -> None:
    server = start()
    with server.client() as http:
        done = finished(http, upload(http, [("guide.md", GUIDE)]).json()["id"])
    server.stop()
    # a job the previous run had queued but not indexed when it stopped (as a crash leaves it)
    late = b"# Late\n\nWritten just before the restart."
    (kb / "late.md").write_bytes(late)
    cut = {
        "id": "cutshort",
        "status": "indexing",
        "collection": "docs",
        "created_at": datetime.now(UTC).isoformat(),
        "finished_at": None,
        "files": [
            {"path": "late.md", "size": len(late), "status": "indexing", "chunks": None,
             "embedded": 0, "skipped": 0, "error": None}
        ],
    }  # fmt: skip
    (tmp_path / "data" / "jobs" / "cutshort.json").write_text(json.dumps(cut))

    again = start()
    with again.client() as http:
        assert http.get(f"/v1/jobs/{done['id']}").json() == done
        rerun = finished(http, "cutshort")
        assert rerun["status"] == "done" and rerun["files"][0]["chunks"] == 1
        assert [j["id"] for j in http.get("/v1/jobs").json()["jobs"]] == ["cutshort", done["id"]]
        assert file_states(http)["late.md"]["state"] == "indexed"


def test_a_kb_disk_without_room_is_507_and_nothing_is_written(start, kb: Path) -> None:
    server = start(min_free_mb=10**9)  # more than any disk has: every write needs it free
    with server.client() as http:
        answer = upload(http, [("guide.md", GUIDE)])
        message = assert_error_shape(answer, 507, "INSUFFICIENT_STORAGE")["message"]
        assert "write 1 uploaded files" in message and str(kb) in message
    assert not (kb / "guide.md").exists()


def test_a_streamed_body_over_the_limit_is_413_and_a_broken_form_422(start, kb: Path) -> None:
    """Without a Content-Length the limit is counted as the body streams in."""
    server = start(upload_max_bytes=4000)
    head = (
        b'--edge\r\nContent-Disposition: form-data; name="files"; filename="big.md"\r\n'
        b"Content-Type: text/markdown\r\n\r\n"
    )

    def body(size: int):
        yield head
        for _ in range(size // 500):
            yield b"x" * 500
        yield b"\r\n--edge--\r\n"

    multipart = {"content-type": "multipart/form-data; boundary=edge"}
    url = "/v1/collections/docs/files"
    with server.client() as http:
        over = http.post(url, content=body(6000), headers=multipart)
        assert "4000 byte limit" in assert_error_shape(over, 413, "PAYLOAD_TOO_LARGE")["message"]
        fits = http.post(url, content=body(1000), headers=multipart)
        assert fits.status_code == 202, fits.text
        unbounded = {"content-type": "multipart/form-data"}  # no boundary: parts cannot be found
        broken = http.post(url, content=b"--edge\r\nnonsense", headers=unbounded)
        assert "boundary" in assert_error_shape(broken, 422, "INVALID_REQUEST")["message"]
        empty = http.post(url, content=b"--edge\r\nnonsense", headers=multipart)
        assert "at least one file" in assert_error_shape(empty, 422, "INVALID_REQUEST")["message"]
    assert (kb / "big.md").stat().st_size == 1000


def test_an_embedder_outage_is_waited_out(
    tmp_path: Path, make_settings, serve, fake_ollama
) -> None:
    """Ollama answers 503 twice: the file is tried again (after 1 s, then 2 s) and indexed."""
    kb = tmp_path / "kb"
    kb.mkdir()
    embedder = {"provider": "ollama", "model": "nomic-embed-text", "dim": 768}
    docs = hash_collection(kb, embedder=embedder | {"base_url": fake_ollama.url})
    server = serve(make_settings(write_config(tmp_path / "c.yaml", {"docs": docs})))
    before = len(fake_ollama.calls("/api/embed"))
    fake_ollama.fail(503, times=2, path="/api/embed")
    with server.client() as http:
        job = finished(http, upload(http, [("guide.md", GUIDE)]).json()["id"])
    assert job["status"] == "done" and job["files"][0]["embedded"] == job["files"][0]["chunks"]
    assert len(fake_ollama.calls("/api/embed")) - before == 3
