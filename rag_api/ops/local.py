"""Operations on a hub opened by this process: the same calls and answers as the server's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rag_api.answering.models import QueryBody
from rag_api.answering.query import run_query
from rag_api.catalog import Catalog
from rag_api.evaluation.request import EvalBody, run_eval
from rag_api.ops.backup.restore import restore_backup
from rag_api.ops.backup.take import take_backup
from rag_api.ops.check.run import run_check
from rag_api.ops.migrate.progress import Bars
from rag_api.ops.migrate.run import MigrateBody, drop_old, run_migration


class LocalOps:
    """What OpsClient asks a server for, done here."""

    where = "this process"

    def __init__(self, hub: Catalog) -> None:
        self.hub = hub

    def check(
        self, collection: str | None, repair: bool, sample: int, verify_backups: bool = False
    ) -> dict[str, Any]:
        return run_check(self.hub, collection, repair, sample, verify_backups).as_dict()

    def plan(self, body: dict[str, Any]) -> dict[str, Any]:
        return MigrateBody.model_validate(body).plan(self.hub).as_dict()

    def migrate(self, body: dict[str, Any]) -> dict[str, Any]:
        with Bars() as bars:
            plan = MigrateBody.model_validate(body).plan(self.hub)
            return run_migration(self.hub, plan, bars).as_dict()

    def drop_old(self, collection: str) -> dict[str, Any]:
        return {"collection": collection, "dropped": drop_old(self.hub, collection)}

    def backup(self, body: dict[str, Any]) -> dict[str, Any]:
        to = body.get("to")
        return take_backup(self.hub, body.get("collections"), Path(to) if to else None).as_dict()

    def restore(self, body: dict[str, Any]) -> dict[str, Any]:
        path, names = Path(body["backup"]), body.get("collections")
        as_name, adopt = body.get("as"), bool(body.get("with_config"))
        return restore_backup(self.hub, path, names, as_name, adopt).as_dict()

    def collections(self) -> list[dict[str, Any]]:
        return [self.hub.describe(n).model_dump(exclude_unset=True) for n in self.hub.collections]

    def query(self, collection: str, body: QueryBody) -> dict[str, Any]:
        return run_query(self.hub, collection, body).model_dump(exclude_unset=True)

    def eval(self, collection: str, body: EvalBody) -> dict[str, Any]:
        return run_eval(self.hub, collection, body)  # no time bound: the user's own process
