"""`rag-hub check`: inspect every collection (or one), optionally repair, report as one document."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime

from rag_api.catalog import Catalog
from rag_api.errors import RagError
from rag_api.evaluation.history import nightly
from rag_api.ops.backup.retention import backup_age
from rag_api.ops.backup.verify import verify_last_backup
from rag_api.ops.check.findings import ERROR, CheckReport, CollectionResult, Finding
from rag_api.ops.check.inspection import inspect_collection
from rag_api.ops.check.last_check import LastCheck
from rag_api.ops.check.repair import apply_repairs
from rag_api.ops.server.readiness import disk_problem

log = logging.getLogger("rag_api.ops.check.run")
DEFAULT_SAMPLE = 16


def run_check(
    hub: Catalog,
    name: str | None = None,
    repair: bool = False,
    sample: int = DEFAULT_SAMPLE,
    verify_backups: bool = False,
) -> CheckReport:
    """Check one collection (any, even disabled) or every enabled one; never raises a RagError.
    `verify_backups`: restore each one's newest backup into a scratch store and compare."""
    started = time.monotonic()
    report = CheckReport(
        store=hub.store.location,
        repair=repair,
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    low = disk_problem(hub)
    if low is not None:  # writes are refused: the store cannot keep up with its kb folders
        report.store_findings.append(Finding("", "disk", ERROR, low.message))
    try:
        names = [hub.collection(name, enabled_only=False).name] if name else hub.visible()
        for each in names:
            result = check_collection(hub, each, repair, sample, explicit=bool(name))
            if verify_backups and not result.skipped:
                if (wrong := verify_last_backup(hub, each)) is not None:
                    result.findings.append(Finding(each, "backup", ERROR, wrong))
            report.results.append(result)
    except RagError as exc:
        log.error("check could not run: %s", exc.message)
        report = CheckReport.failed(exc.code, exc.message, store=report.store, repair=repair)
    report.seconds = time.monotonic() - started
    LastCheck(hub.settings.data_dir).record(report)  # what the console shows
    return report


def run_check_job(
    hub: Catalog, name: str | None, repair: bool, sample: int, verify_backups: bool
) -> CheckReport:
    """run_check as a job of the hub's (kind `check`): failed when the check could not run, done
    whatever it found. A collection the caller cannot see is answered without a job (nothing
    ran, as a backup of an unknown collection is refused before it is one): its report says so."""
    try:
        names = [hub.collection(name, enabled_only=False).name] if name else hub.visible()
    except RagError:
        return run_check(hub, name, repair, sample, verify_backups)
    asked = {"collection": name, "repair": repair, "sample": sample}
    job = hub.jobs.create("check", names, request={**asked, "verify_backups": verify_backups})
    return hub.jobs.run(job, lambda _: run_check(hub, name, repair, sample, verify_backups))


def check_collection(
    hub: Catalog, name: str, repair: bool, sample: int, explicit: bool = False
) -> CollectionResult:
    """One collection's findings; with `repair`, the repairs made and which findings they fixed."""
    collection = hub.collections[name]
    if not collection.cfg.enabled and not explicit:
        return CollectionResult(name, skipped="disabled")
    max_bytes = hub.settings.max_file_bytes  # the files `rag-hub index` and the watcher skip
    inspection = inspect_collection(collection, sample, max_bytes)
    result = CollectionResult(name, findings=inspection.findings)
    if repair and inspection.writable and inspection.plan:
        result.repairs = apply_repairs(collection, inspection.plan, max_bytes)
        again = inspect_collection(collection, sample, max_bytes)
        if inspection.plan.rebuild and again.plan:  # what the rebuild dropped, from the kb folder
            result.repairs += apply_repairs(collection, again.plan, max_bytes)
            again = inspect_collection(collection, sample, max_bytes)
        still = {f.key for f in again.findings}
        for finding in result.findings:
            finding.repaired = finding.key not in still
        # what the repairs could not fix, or newly revealed, is reported as found now
        known = {f.key for f in result.findings}
        result.findings += [f for f in again.findings if f.key not in known]
        inspection = again
    if (dropped := nightly(hub, name)) is not None:  # collections with an `eval:` file
        result.findings.append(Finding(name, "eval", ERROR, dropped))
    if inspection.info is not None:
        result.physical, result.points = inspection.info.physical, inspection.info.points
    result.last_backup, too_old = backup_age(hub.settings, name)
    if too_old is not None:
        result.findings.append(Finding(name, "backup", ERROR, too_old))
    log.info("%s: %d findings, %d repairs", name, len(result.findings), len(result.repairs))
    return result
