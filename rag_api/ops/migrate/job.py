"""A migration as a job of the hub's (kind `migrate`): what the server's event stream and
`rag-hub migrate` in this process both run, so /v1/jobs shows each with its progress."""

from __future__ import annotations

import threading
from contextlib import ExitStack

from rag_api.catalog import Catalog
from rag_api.jobs.job import Job
from rag_api.jobs.lane import Report, Work
from rag_api.ops.migrate.run import MigrationPlan, MigrationResult, Progress, run_migration


def migration_job(
    hub: Catalog,
    plan: MigrationPlan,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    claim: ExitStack | None = None,
) -> tuple[Job, Work]:
    """The job of carrying out `plan` (its request: the plan), and its work: run_migration's,
    its progress reported to the job and to `progress` too."""
    job = hub.jobs.create("migrate", [plan.collection], request=plan.as_dict())

    def work(report: Report) -> MigrationResult:
        def both(phase: str, done: int, total: int) -> None:
            report(phase, done, total)
            if progress is not None:
                progress(phase, done, total)

        return run_migration(hub, plan, both, cancel, claim)

    return job, work
