"""The last integrity check's result per collection, kept so the console can show it.

`rag-hub check` (the nightly timer, a person, POST /v1/ops/check) reports to its caller and
journald; nothing else remembered it. Each run records, per collection it checked, its status
and when, in RAG_DATA_DIR/checks/last.json (written atomically; a check of one collection
replaces only that collection's entry).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from rag_api.atomic import write_atomically
from rag_api.ops.check.findings import CheckReport

log = logging.getLogger("rag_api.ops.check.last_check")


class LastCheck:
    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / "checks" / "last.json"

    def read(self) -> dict[str, dict[str, Any]]:
        """Collection name -> {status, problems, repaired, repair, started_at}; {} when none ran
        (or the record is unreadable: it is a convenience, never a reason to fail)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def record(self, report: CheckReport) -> None:
        """Remember what this run found for each collection it checked (not skipped ones)."""
        if report.error is not None:
            return  # the check could not run: the previous results stay the last known ones
        data = self.read()
        for result in report.results:
            if result.skipped:
                continue
            summary = result.summary()
            data[result.name] = {
                "status": summary["status"],
                "problems": summary["problems"],
                "repaired": summary["repaired"],
                "repair": report.repair,
                "started_at": report.started_at,
            }
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(self.path, json.dumps(data, indent=2, sort_keys=True))
        except OSError as exc:  # a full or read-only disk: the check's own result still stands
            log.warning("could not record the check's result in %s: %s", self.path, exc)
