"""Jobs kept on disk: one small JSON file per job, written atomically when the job is created and
when it finishes (its progress in between lives in memory: a restart runs an unfinished job whole
again, so nothing in between needs to survive). The upload jobs live in RAG_DATA_DIR/jobs."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from rag_api.atomic import write_atomically
from rag_api.jobs.job import Job, Kind

log = logging.getLogger("rag_api.jobs")


class JobFolder:
    def __init__(self, path: Path, kind: Kind) -> None:
        self.path = path
        self.kind = kind

    def load(self) -> list[Job]:
        """The jobs kept here, oldest first; an unreadable file is dropped, said in the log."""
        loaded = []
        files = sorted(self.path.glob("*.json")) if self.path.is_dir() else []
        for file in files:
            try:
                data = json.loads(file.read_text(encoding="utf-8"))
                loaded.append(Job.from_dict(data, self.kind))
            except (OSError, ValueError, TypeError, KeyError) as exc:
                log.warning("%s job %s is unreadable and is dropped: %s", self.kind, file.name, exc)
                file.unlink(missing_ok=True)
        return sorted(loaded, key=lambda job: job.created_at)

    def save(self, job: Job) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        # not fsynced: losing a job record takes a machine crash, and an upload's files are
        # indexed at the next start anyway (the files themselves are fsynced)
        text = json.dumps(job.as_dict())
        write_atomically(self.path / f"{job.id}.json", text, durable=False)

    def remove(self, job_id: str) -> None:
        (self.path / f"{job_id}.json").unlink(missing_ok=True)
