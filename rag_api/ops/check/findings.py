"""What the integrity check reports: findings, repairs, and the one JSON document of a run."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

ERROR = "error"  # the collection is not what it should be: exit status 1
WARNING = "warning"  # worth knowing, not a failure (a kb file the indexer cannot read)

HEALTHY, PROBLEMS, FAILED = 0, 1, 2  # exit statuses: healthy, problems found, could not run


@dataclass
class Finding:
    """One problem of one collection; `subject` (a file, a point id) tells it apart from others."""

    collection: str
    check: str
    severity: str
    detail: str
    subject: str = ""
    repairable: bool = False
    repaired: bool = False

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.collection, self.check, self.subject)


@dataclass
class Repair:
    collection: str
    action: str
    detail: str


@dataclass
class CollectionResult:
    name: str
    physical: str | None = None
    points: int = 0
    skipped: str | None = None
    findings: list[Finding] = field(default_factory=list)
    repairs: list[Repair] = field(default_factory=list)
    last_backup: dict[str, Any] | None = (
        None  # the newest backup holding it (taken_at, age_h, path)
    )

    @property
    def open_errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == ERROR and not f.repaired]

    @property
    def status(self) -> str:
        if self.skipped:
            return "skipped"
        return "problems" if self.open_errors else "healthy"

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "physical": self.physical,
            "points": self.points,
            "status": self.status,
            "skipped": self.skipped,
            "problems": len(self.open_errors),
            "repaired": sum(1 for f in self.findings if f.repaired),
            "last_backup": self.last_backup,
        }


@dataclass
class CheckReport:
    """A whole run: per-collection results, or the reason it could not run."""

    store: str = ""
    repair: bool = False
    started_at: str = ""
    seconds: float = 0.0
    results: list[CollectionResult] = field(default_factory=list)
    store_findings: list[Finding] = field(default_factory=list)  # of no one collection (disk)
    error: dict[str, str] | None = None

    @property
    def exit_code(self) -> int:
        if self.error is not None:
            return FAILED
        problems = self.store_findings or any(r.open_errors for r in self.results)
        return PROBLEMS if problems else HEALTHY

    def as_dict(self) -> dict[str, Any]:
        """The JSON document of `rag-hub check --json` (and of POST /v1/ops/check)."""
        status = {HEALTHY: "healthy", PROBLEMS: "problems", FAILED: "error"}[self.exit_code]
        document: dict[str, Any] = {
            "status": status,
            "exit_code": self.exit_code,
            "store": self.store,
            "repair": self.repair,
            "started_at": self.started_at,
            "seconds": round(self.seconds, 3),
            "collections": [r.summary() for r in self.results],
            "findings": [asdict(f) for f in self.store_findings]
            + [asdict(f) for r in self.results for f in r.findings],
            "repairs": [asdict(x) for r in self.results for x in r.repairs],
        }
        if self.error is not None:
            document["error"] = self.error
        return document

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> CheckReport:
        """The report a check document (`as_dict`, a server's answer) was made from."""
        findings = [Finding(**f) for f in document["findings"]]
        results = [
            CollectionResult(
                row["name"],
                row["physical"],
                row["points"],
                row["skipped"],
                [f for f in findings if f.collection == row["name"]],
                [Repair(**x) for x in document["repairs"] if x["collection"] == row["name"]],
                row["last_backup"],
            )
            for row in document["collections"]
        ]
        names = {row["name"] for row in document["collections"]}
        return cls(
            store=document["store"],
            repair=document["repair"],
            started_at=document["started_at"],
            seconds=document["seconds"],
            results=results,
            store_findings=[f for f in findings if f.collection not in names],
            error=document.get("error"),
        )

    @classmethod
    def failed(cls, code: str, message: str, **fields: Any) -> CheckReport:
        return cls(error={"code": code, "message": message}, **fields)


def render_text(document: dict[str, Any]) -> str:
    """The human summary of a check document."""
    if document["status"] == "error":
        return f"check could not run: {document['error']['message']}"
    lines = []
    by_collection: dict[str, list[dict[str, Any]]] = {}
    for finding in document["findings"]:
        by_collection.setdefault(finding["collection"], []).append(finding)
    for row in document["collections"]:
        where = f"{row['physical']}, {row['points']} chunks" if row["physical"] else "not in store"
        state = f"skipped ({row['skipped']})" if row["skipped"] else row["status"]
        lines.append(f"{row['name']} ({where}): {state}")
        if row.get("last_backup"):
            last = row["last_backup"]
            lines.append(f"  last backup {last['age_h']:.1f} h ago: {last['path']}")
        for f in by_collection.get(row["name"], []):
            mark = " [repaired]" if f["repaired"] else ""
            lines.append(f"  {f['severity']:<7} {f['check']}: {f['detail']}{mark}")
    store_wide = by_collection.get("", [])
    for f in store_wide:
        lines.append(f"store: {f['severity']} {f['check']}: {f['detail']}")
    for repair in document["repairs"]:
        lines.append(f"repaired {repair['collection']}: {repair['action']}: {repair['detail']}")
    problems = len(store_wide) + sum(row["problems"] for row in document["collections"])
    lines.append(
        f"{'healthy' if not problems else f'{problems} problem(s)'}: "
        f"{len(document['collections'])} collection(s) checked in {document['seconds']:.1f} s"
    )
    return "\n".join(lines)
