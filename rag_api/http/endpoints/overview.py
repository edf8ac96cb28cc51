"""GET /v1/overview: every collection at a glance, for the console's first page (reader key).

One call gathers what otherwise sits behind several doors: the configuration and store state
(`Hub.describe`), the kb folder's file count, the folder watcher's last sync (its full status
stays admin-only at /v1/indexer/status), the last integrity check (rag_api.ops.check.last_check) and
whether a migration runs. It also says what the caller's key may do, so a page can offer edits
only to an admin and explain why otherwise.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from rag_api.errors import KbFolderMissing, StoreUnavailable
from rag_api.http.auth import PrincipalDep, require_reader
from rag_api.http.deps import HubDep, KeyringDep, WatcherDep, indexer_status
from rag_api.hub import Hub
from rag_api.indexing import kb
from rag_api.ops.backup.retention import last_backups
from rag_api.ops.check.last_check import LastCheck
from rag_api.ops.migrate.run import migrating
from rag_api.ops.migrate.versions import versions
from rag_api.store import version_of

router = APIRouter(tags=["collections"], dependencies=[Depends(require_reader)])
WATCHER_FIELDS = ("watching", "files", "queue", "busy", "held", "last_sync", "last_reconcile")


@router.get("/v1/overview")
def overview(
    hub: HubDep, watcher: WatcherDep, keyring: KeyringDep, principal: PrincipalDep
) -> dict[str, Any]:
    """Each collection: configuration, chunks, files, watcher, last check, migration; and
    `access`: `admin` (may change the knowledge base) or `read`; `keys`: whether keys are set."""
    state_of = indexer_status(watcher)
    checks = LastCheck(hub.settings.data_dir).read()
    backups = last_backups(hub.settings.backups_path)
    rows = []
    for name in hub.visible():
        row = hub.describe(name).model_dump(exclude_unset=True)
        row["files"], row["kb_problem"] = _file_count(hub, name)
        state = state_of["collections"].get(name)
        row["watcher"] = {"running": state_of["running"]} | (
            {key: state[key] for key in WATCHER_FIELDS} | {"last_error": state["last_error"]}
            if state
            else {}
        )
        row["last_check"] = checks.get(name)
        row["last_backup"] = backups[name].summary() if name in backups else None
        row["migration"] = _migration(hub, name, row["physical"])
        rows.append(row)
    return {
        "default_collection": hub.default_visible(),
        "keys": keyring.guarded,
        "access": "admin" if principal is not None and principal.write else "read",
        "collections": rows,
    }


def _file_count(hub: Hub, name: str) -> tuple[int | None, str | None]:
    """The indexable files in the collection's kb folder (None without one), or why unknown."""
    root = hub.collections[name].kb_path
    if root is None:
        return None, None
    try:
        files, _ = kb.scan(root, hub.settings.max_file_bytes)
    except KbFolderMissing as exc:
        return None, exc.message
    return len(files), None


def _migration(hub: Hub, name: str, live: str | None) -> dict[str, Any]:
    """`running` in this process now; `pending`: a newer physical version beside the live one
    (a migration cut short, or one rolled back), which the next `migrate` resumes."""
    try:
        newer = [p for p in versions(hub.store, name) if live and version_of(p) > version_of(live)]
    except StoreUnavailable:
        newer = []
    return {"running": migrating(hub, name), "pending": newer[-1] if newer else None}
