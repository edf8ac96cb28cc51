"""/v1/ops/*: the integrity check and migrations run inside the server (admin key; a check
that repairs nothing needs only the reader key), each run a job of the hub's (/v1/jobs).

The embedded store belongs to one process; while `rag-hub serve` owns it, `rag-hub check` and
`rag-hub migrate` send the operation here and print the same output.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import AsyncIterator
from contextlib import ExitStack
from functools import partial
from typing import Any

import anyio
from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from rag_api.access.grant import audit
from rag_api.http.auth import PrincipalDep, authorize, require_admin, require_reader
from rag_api.http.deps import HubDep
from rag_api.jobs.job import error_of
from rag_api.ops.check.run import run_check_job
from rag_api.ops.interface import CHECK, DROP_OLD, MIGRATE, PLAN, CheckRequest, CollectionRequest
from rag_api.ops.migrate.job import migration_job
from rag_api.ops.migrate.run import MigrateBody, drop_old, exclusive

router = APIRouter(tags=["ops"])
ADMIN = [Depends(require_admin)]


@router.post(CHECK.path, dependencies=[Depends(require_reader)])
def check(
    request: Request, body: CheckRequest, hub: HubDep, principal: PrincipalDep
) -> dict[str, Any]:
    """The check's JSON document (status 200 whatever it found: see its exit_code); reading
    needs the reader key, repairing the admin key. Recorded as a job (/v1/jobs)."""
    if body.repair:
        authorize(request, principal, "write", admin=True)
    found = run_check_job(hub, body.collection, body.repair, body.sample, body.verify_backups)
    if body.repair:
        repairs = {r.name: len(r.repairs) for r in found.results}
        audit("check --repair", body.collection or "*", repairs=repairs)
    return found.as_dict()


@router.post(PLAN.path, dependencies=ADMIN)
def migrate_plan(body: MigrateBody, hub: HubDep) -> dict[str, Any]:
    """What the migration would do; changes nothing."""
    return body.plan(hub).as_dict()


class Events(StreamingResponse):
    """The NDJSON event stream; sets `cancel` however it ends (a client gone before the first
    line included), a no-op once the migration has finished."""

    media_type = "application/x-ndjson"

    def __init__(self, content: AsyncIterator[bytes], cancel: threading.Event) -> None:
        super().__init__(content)
        self.cancel = cancel

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.cancel.set()


@router.post(
    MIGRATE.path,
    dependencies=ADMIN,
    response_class=Response,  # no media type of its own: the errors stay documented as JSON
    responses={200: {"content": {Events.media_type: {}}, "description": "NDJSON events"}},
)
def migrate(body: MigrateBody, hub: HubDep) -> StreamingResponse:
    """Run a migration, streaming NDJSON events: plan, progress..., then done or error; the
    run is a job too (/v1/jobs, kind `migrate`).

    A client that hangs up before the alias swap cancels it (re-running resumes); after the
    swap the migration completes.
    """
    plan = body.plan(hub)
    audit("migrate", body.collection, target=plan.target, rollback=body.rollback)
    claim = ExitStack()  # held from here to the migration's end: a second one is refused (409)
    claim.enter_context(exclusive(hub, body.collection))
    events: queue.Queue[dict[str, Any] | None] = queue.Queue()
    events.put({"event": "plan", "plan": plan.as_dict()})
    cancel = threading.Event()
    job, work = migration_job(hub, plan, partial(_progress, events), cancel, claim)

    def migrate_as_job() -> None:
        try:
            result = hub.jobs.run(job, work)
            events.put({"event": "done", "result": result.as_dict()})
        except Exception as exc:  # reported in the stream: the status line is already sent
            events.put({"event": "error", "error": error_of(exc)})
        finally:
            claim.close()  # already released when run_migration started; here in case it did not
            events.put(None)

    async def stream() -> AsyncIterator[bytes]:
        while True:
            try:
                event = await anyio.to_thread.run_sync(partial(events.get, timeout=0.5))
            except queue.Empty:
                continue
            if event is None:
                return
            yield _line(event)

    name = f"migrate-{plan.collection}"
    threading.Thread(target=migrate_as_job, name=name, daemon=True).start()
    return Events(stream(), cancel)


@router.post(DROP_OLD.path, dependencies=ADMIN)
def drop_old_collections(body: CollectionRequest, hub: HubDep) -> dict[str, Any]:
    """Delete the collections a migration left behind (the live one stays)."""
    dropped = drop_old(hub, body.collection)
    audit("drop old versions", body.collection, dropped=dropped)
    return {"collection": body.collection, "dropped": dropped}


def _progress(events: queue.Queue, phase: str, done: int, total: int) -> None:
    events.put({"event": "progress", "phase": phase, "done": done, "total": total})


def _line(event: dict[str, Any]) -> bytes:
    return (json.dumps(event, ensure_ascii=False) + "\n").encode()
