"""The upload service the routes call: accept files, list a folder's files, delete, download."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rag_api.catalog import Catalog
from rag_api.errors import FileNotFound
from rag_api.indexing.sync import SyncReport, file_scope, remove_files
from rag_api.jobs.job import JobFile
from rag_api.uploads.file_status import HashCache, list_files
from rag_api.uploads.indexing import IndexQueue
from rag_api.uploads.intake import Incoming, kb_root, plan, write
from rag_api.uploads.names import existing_file

log = logging.getLogger("rag_api.uploads")


class Uploads:
    """One per app: the indexing queue and its worker; the upload jobs are the hub's
    (`hub.jobs`, kind `upload`), kept in RAG_DATA_DIR/jobs."""

    def __init__(self, hub: Catalog) -> None:
        settings = hub.settings
        self.hub = hub
        hub.jobs.keep("upload", settings.data_dir / "jobs")
        self.queue = IndexQueue(hub, settings.upload_queue)
        self.hashes = HashCache()

    def start(self) -> Uploads:
        self.queue.start()
        return self

    def stop(self) -> None:
        self.queue.stop()

    def accept(
        self, name: str, files: list[Incoming], folder: str | None, overwrite: bool
    ) -> dict[str, Any]:
        """Write the files into the collection's kb folder and queue their indexing: the job."""
        collection = self.hub.collection(name)
        targets = plan(collection, files, folder, overwrite, self.hub.settings)
        with self.queue.slot():  # 429 here, before anything is written
            write(targets, overwrite)
            files = [JobFile(t.rel, t.incoming.size) for t in targets]
            job = self.hub.jobs.create("upload", [collection.name], files=files)
            self.queue.submit(job)
        log.info(
            "%s: %d files uploaded (%s), job %s",
            collection.name,
            len(targets),
            ", ".join(t.rel for t in targets[:5]) + (" …" if len(targets) > 5 else ""),
            job.id,
        )
        return self.hub.jobs.get(job.id)

    def files(self, name: str, watcher_bad: Mapping[str, str]) -> dict[str, Any]:
        """The kb folder's files with their index state; `watcher_bad`: the in-process watcher's
        files it could not read (it knows of files nobody uploaded)."""
        collection = self.hub.collection(name)
        root = kb_root(collection)
        failed = {**watcher_bad, **self.queue.failures.reasons(collection.name, root)}
        rows = list_files(collection, self.hub.settings.max_file_bytes, self.hashes, failed)
        return {"collection": collection.name, "files": rows}

    def delete(self, name: str, rel: str) -> dict[str, Any]:
        """Remove a kb file and its chunks; a file gone from the folder whose chunks remain
        (not synced yet) loses them too."""
        collection = self.hub.collection(name)
        root = kb_root(collection)
        try:
            clean, path = existing_file(root, rel)
        except FileNotFound:
            clean, path = rel, None
            if not collection.count(file_scope([rel])):
                raise
        with self.queue.file_lock(collection.name):
            if path is not None:
                path.unlink(missing_ok=True)
            report = SyncReport(collection.name)
            remove_files(collection, [clean], report)
        self.queue.failures.forget(collection.name, clean)
        return {"deleted": clean, "chunks_removed": report.stats.deleted}

    def original(self, name: str, rel: str) -> Path:
        """The file to download (FileNotFound for anything that is not a kb file)."""
        collection = self.hub.collection(name)
        return existing_file(kb_root(collection), rel)[1]
