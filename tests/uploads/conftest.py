"""A live hub with a kb folder on the embedded store, and the calls of the upload API."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import LiveServer, hash_collection, wait_for, write_config

ADMIN, READER = "admin-key", "reader-key"
FileItem = tuple[str, bytes]  # (filename as the client sends it, content)


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "faq.md").write_text("# Refunds\n\nRefunds are possible within 30 days of purchase.\n")
    return root


@pytest.fixture
def start(
    tmp_path: Path, kb: Path, make_settings: Callable[..., Any], serve: Callable[..., LiveServer]
) -> Callable[..., LiveServer]:
    """start(watch=False, **settings) -> a live server: `docs` on `kb` (hash embedder, small
    chunks), `notes` without a kb folder; settings such as upload_queue=1 go to Settings."""

    def run(watch: bool = False, **overrides: Any) -> LiveServer:
        config = write_config(
            tmp_path / "collections.yaml",
            {
                "docs": hash_collection(kb, chunking={"size": 120, "overlap": 10}),
                "notes": hash_collection(),
            },
        )
        return serve(make_settings(config, **overrides), watch=watch)

    return run


def upload(
    http: httpx.Client,
    files: list[FileItem],
    collection: str = "docs",
    **form: str,
) -> httpx.Response:
    """POST the files as multipart `files` parts, with the other form fields."""
    parts = [("files", (name, content, "application/octet-stream")) for name, content in files]
    return http.post(f"/v1/collections/{collection}/files", files=parts, data=form)


def finished(http: httpx.Client, job_id: str, timeout: float = 60) -> dict[str, Any]:
    """The job once done or failed."""

    def done() -> dict[str, Any] | None:
        job = http.get(f"/v1/jobs/{job_id}").json()
        return job if job["status"] in ("done", "failed") else None

    return wait_for(done, timeout=timeout)


def file_states(http: httpx.Client, collection: str = "docs") -> dict[str, dict[str, Any]]:
    answer = http.get(f"/v1/collections/{collection}/files")
    assert answer.status_code == 200, answer.text
    return {row["path"]: row for row in answer.json()["files"]}
