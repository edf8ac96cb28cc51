"""Operations on a hub opened by this process (`Ops`, rag_api.ops.interface): each operation is
the method of its name, with the same request and answer as the server's route."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from rag_api.answering.models import QueryAnswer, QueryBody
from rag_api.answering.query import run_query
from rag_api.catalog import Catalog, CollectionList
from rag_api.evaluation.request import EvalBody, run_eval
from rag_api.ops.backup.jobs import backup_job
from rag_api.ops.backup.restore import RestoreResult, restore_backup
from rag_api.ops.backup.take import BackupResult
from rag_api.ops.check.findings import CheckReport
from rag_api.ops.check.run import run_check_job
from rag_api.ops.interface import (
    BackupRequest,
    CheckRequest,
    CollectionRequest,
    Dropped,
    Json,
    Nothing,
    OnCollection,
    OnSource,
    Operation,
    RestoreRequest,
    SyncBody,
)
from rag_api.ops.migrate.job import migration_job
from rag_api.ops.migrate.run import MigrateBody, MigrationPlan, MigrationResult, drop_old
from rag_api.ops.progress import Bars

Q = TypeVar("Q", bound=BaseModel)
A = TypeVar("A")


class LocalOps:
    """What OpsClient asks a server for, done here; the jobs (check, migrate, backup) are this
    hub's, as the server's are its own."""

    where = "this process"

    def __init__(self, hub: Catalog) -> None:
        self.hub = hub

    def run(self, op: Operation[Q, A], request: Q) -> A:
        return getattr(self, op.name)(request)

    def check(self, request: CheckRequest) -> CheckReport:
        asked = (request.collection, request.repair, request.sample, request.verify_backups)
        return run_check_job(self.hub, *asked)

    def plan(self, request: MigrateBody) -> MigrationPlan:
        return request.plan(self.hub)

    def migrate(self, request: MigrateBody) -> MigrationResult:
        with Bars() as bars:
            job, work = migration_job(self.hub, request.plan(self.hub), bars)
            return self.hub.jobs.run(job, work)

    def drop_old(self, request: CollectionRequest) -> Dropped:
        name = request.collection
        return Dropped(collection=name, dropped=drop_old(self.hub, name))

    def backup(self, request: BackupRequest) -> BackupResult:
        job, work = backup_job(self.hub, request.collections, request.to, in_server=False)
        return self.hub.jobs.run(job, work)

    def restore(self, request: RestoreRequest) -> RestoreResult:
        return restore_backup(
            self.hub,
            Path(request.backup),
            request.collections,
            request.as_name,
            request.with_config,
        )

    def collections(self, request: Nothing) -> CollectionList:
        return self.hub.listing()

    def query(self, request: OnCollection[QueryBody]) -> QueryAnswer:
        return run_query(self.hub, request.collection, request.body)

    def sync(self, request: OnSource[SyncBody]) -> Json:
        asked = request.body
        with Bars() as bars:
            report = self.hub.sources.run(
                request.collection, request.source, prune=asked.prune, force=asked.force, also=bars
            )
        return report.as_dict()

    def eval(self, request: OnCollection[EvalBody]) -> Json:
        # no time bound: the user's own process
        return run_eval(self.hub, request.collection, request.body)
