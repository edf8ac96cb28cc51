"""The operations the CLI runs on a hub, each declared once here: its name, its HTTP route, what
it takes and what it answers. `Ops` runs them: `rag_api.ops.local.LocalOps` in this process (the
method of the operation's name), `rag_api.cli.ops_client.OpsClient` inside the server that owns
the store (generic over these declarations). Adding one: docs/architecture.md, "Adding an
operation"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Generic, Literal, Protocol, TypeVar
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from rag_api.answering.models import QueryAnswer, QueryBody
from rag_api.catalog import CollectionList
from rag_api.evaluation.request import EvalBody
from rag_api.ops.backup.restore import RestoreResult
from rag_api.ops.backup.take import BackupResult
from rag_api.ops.check.findings import CheckReport
from rag_api.ops.check.run import DEFAULT_SAMPLE
from rag_api.ops.migrate.run import MigrateBody, MigrationPlan, MigrationResult
from rag_api.schema import Body

Q = TypeVar("Q", bound=BaseModel)  # what an operation takes
A = TypeVar("A")  # what it answers
B = TypeVar("B", bound=BaseModel)
# how the server answers: at once; 202 with a job to follow at /v1/jobs/{id} until it ends; an
# NDJSON stream of events (progress..., then done or error)
Follow = Literal["answer", "job", "events"]


# --- what operations take ---------------------------------------------------------------------


class CheckRequest(Body):
    model_config = ConfigDict(extra="forbid")

    collection: str | None = None
    repair: bool = False
    sample: Annotated[int, Field(ge=0, le=10_000)] = DEFAULT_SAMPLE
    verify_backups: bool = False  # restore each newest backup into a scratch store and compare


class CollectionRequest(Body):
    model_config = ConfigDict(extra="forbid")

    collection: str


class BackupRequest(Body):
    model_config = ConfigDict(extra="forbid")

    collections: list[str] | None = None  # default: every configured collection
    to: str | None = None  # a folder on the server's machine (default RAG_BACKUP_DIR)


class RestoreRequest(Body):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    backup: str  # the backup folder, on the server's machine
    collections: list[str] | None = None
    as_name: str | None = Field(default=None, alias="as")
    with_config: bool = False


class SyncBody(Body):
    model_config = ConfigDict(extra="forbid")

    prune: bool = False  # remove a mass of vanished documents (else held, and said why)
    force: bool = False  # read every document again, whatever its version


class Nothing(BaseModel):
    """No request body (a GET)."""


class OnCollection(BaseModel, Generic[B]):
    """A request to a route with the collection in its path (`{collection}`) and `body` as its
    JSON body."""

    collection: str
    body: B


class OnSource(OnCollection[B], Generic[B]):
    """... and one of its sources (`{source}`)."""

    source: str


# --- what they answer (besides the hub's own dataclasses) -----------------------------------


class Dropped(BaseModel):
    collection: str
    dropped: list[str]  # the physical collections deleted


Json = dict[str, Any]  # an evaluation's report (rag_api.evaluation)


# --- the operations ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Operation(Generic[Q, A]):
    name: str  # LocalOps' method that runs it
    method: Literal["GET", "POST"]
    path: str  # the route; `{collection}` comes from an OnCollection request
    request: type[Q]
    answer: Any  # type[A]: a type with `from_dict`, else anything pydantic validates
    follow: Follow = "answer"

    def address(self, request: Q) -> tuple[str, dict[str, Any] | None]:
        """The request's path and JSON body (None: none)."""
        if isinstance(request, OnCollection):
            named = {k: quote(v, safe="") for k, v in request if isinstance(v, str)}
            return self.path.format(**named), _dump(request.body)
        return self.path, None if isinstance(request, Nothing) else _dump(request)

    def parse(self, data: Any) -> A:
        """The answer from the JSON the route gave."""
        from_dict = getattr(self.answer, "from_dict", None)
        if from_dict is not None:
            return from_dict(data)
        return TypeAdapter(self.answer).validate_python(data)


CHECK = Operation("check", "POST", "/v1/ops/check", CheckRequest, CheckReport)
PLAN = Operation("plan", "POST", "/v1/ops/migrate/plan", MigrateBody, MigrationPlan)
MIGRATE = Operation(
    "migrate", "POST", "/v1/ops/migrate", MigrateBody, MigrationResult, follow="events"
)
DROP_OLD = Operation("drop_old", "POST", "/v1/ops/drop-old", CollectionRequest, Dropped)
BACKUP = Operation("backup", "POST", "/v1/ops/backup", BackupRequest, BackupResult, follow="job")
RESTORE = Operation("restore", "POST", "/v1/ops/restore", RestoreRequest, RestoreResult)
COLLECTIONS = Operation("collections", "GET", "/collections", Nothing, CollectionList)
QUERY = Operation("query", "POST", "/query/{collection}", OnCollection[QueryBody], QueryAnswer)
EVAL = Operation("eval", "POST", "/v1/collections/{collection}/eval", OnCollection[EvalBody], Json)
SYNC = Operation(
    "sync",
    "POST",
    "/v1/collections/{collection}/sources/{source}/sync",
    OnSource[SyncBody],
    Json,  # rag_api.sources.sync.SourceReport.as_dict()
    follow="job",
)
OPERATIONS = (CHECK, PLAN, MIGRATE, DROP_OLD, BACKUP, RESTORE, COLLECTIONS, QUERY, EVAL, SYNC)


class Ops(Protocol):
    """Runs the operations on a hub: in this process, or in the server that owns its store."""

    where: str  # "this process", "the rag-hub server at URL": for logs and errors

    def run(self, op: Operation[Q, A], request: Q) -> A:
        """The operation's answer; its error (a RagError) when it fails."""
        ...


def _dump(request: BaseModel) -> dict[str, Any]:
    return request.model_dump(mode="json", exclude_unset=True, by_alias=True)
