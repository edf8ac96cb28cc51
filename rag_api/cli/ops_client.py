"""The CLI's way into a running server (where it recorded it listens, else RAG_HOST, RAG_PORT):
/v1/ops with RAG_ADMIN_API_KEY, and the reads with RAG_API_KEY; RAG_KEY (or `--key`) for both
when set. Generic over the operations that
rag_api.ops.interface declares: a new one needs nothing here."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from rag_api.errors import RagError, UpstreamUnavailable, redact
from rag_api.ops.interface import Operation
from rag_api.ops.progress import Bars
from rag_api.ops.server.listening import recorded_url, server_url
from rag_api.settings import Settings

LONG = 4 * 3600.0  # a check with repairs or a migration of a big collection takes a while
JOB_POLL_S = 0.5
Q = TypeVar("Q", bound=BaseModel)
A = TypeVar("A")


class RemoteError(RagError):
    """An error the server answered with, kept with its code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class OpsClient:
    """Operations run by the server that owns the store (`Ops`, rag_api.ops.interface)."""

    def __init__(self, settings: Settings, admin: bool = True) -> None:
        # the address the server recorded beside the store's lock, else RAG_HOST / RAG_PORT
        self.url = recorded_url(settings) or server_url(settings)
        self.where = f"the rag-hub server at {self.url}"
        key = settings.key or (
            settings.admin_api_key if admin else settings.api_key or settings.admin_api_key
        )
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = httpx.Client(
            base_url=self.url, headers=headers, timeout=httpx.Timeout(LONG, connect=5.0)
        )

    def answers(self) -> bool:
        """A rag-hub server is listening here."""
        try:
            response = self._http.get("/health", timeout=5.0)
            return response.status_code == 200 and response.json().get("status") == "ok"
        except (httpx.HTTPError, ValueError, AttributeError):
            return False

    def serves(self, settings: Settings) -> bool:
        """A rag-hub server of the store of `settings` answers here: its /ready names the store
        it opened (to a key that reads every collection). One that does not say (starting, or a
        narrower key) is taken at its word; one that names another store is another hub."""
        if not self.answers():
            return False
        try:
            store = self._http.get("/ready", timeout=10.0).json().get("store")
        except (httpx.HTTPError, ValueError, AttributeError):
            return True
        if not isinstance(store, str):
            return True
        if settings.qdrant_url is not None:
            return store == redact(settings.qdrant_url)
        return Path(store).resolve() == settings.qdrant_path.resolve()

    def run(self, op: Operation[Q, A], request: Q) -> A:
        """Ask the server; an operation that answers with a job is waited for, one that streams
        events draws their progress on stderr."""
        path, body = op.address(request)
        if op.follow == "events":
            return op.parse(self._streamed(path, body))
        answer = self._call(op.method, path, body)
        if op.follow == "job":
            answer = self._job(answer["id"])
        return op.parse(answer)

    def _job(self, job_id: str) -> Any:
        """The result of a job of the server's, once it ends, drawing the progress it reports;
        its error if it failed."""
        job = self._call("GET", f"/v1/jobs/{job_id}")
        with Bars() as bars:
            while job["status"] not in ("done", "failed"):
                if progress := job.get("progress"):
                    detail = progress.get("detail") or {}
                    bars(progress["phase"], progress["done"], progress["total"], **detail)
                time.sleep(JOB_POLL_S)
                job = self._call("GET", f"/v1/jobs/{job_id}")
        if job["status"] == "failed":
            raise RemoteError(job["error"]["code"], f"server: {job['error']['message']}")
        return job["result"]

    def _streamed(self, path: str, body: dict[str, Any] | None) -> Any:
        """The result of an operation that streams its events, drawing its progress."""
        with Bars() as bars:
            for event in self._events(path, body):
                if event.get("event") == "progress":
                    bars(event["phase"], event["done"], event["total"])
                elif event.get("event") == "done":
                    return event["result"]
                elif event.get("event") == "error":
                    raise RemoteError(
                        event["error"]["code"], f"server: {event['error']['message']}"
                    )
        raise RemoteError("INTERNAL_ERROR", f"{self.where} ended the operation without a result")

    def _events(self, path: str, body: dict[str, Any] | None) -> Iterator[dict[str, Any]]:
        try:
            with self._http.stream("POST", path, json=body) as response:
                if response.status_code != 200:
                    response.read()
                    raise _error(response)
                for line in response.iter_lines():
                    if line.strip():
                        yield json.loads(line)
        except httpx.HTTPError as exc:
            raise UpstreamUnavailable(self.where, str(exc)) from exc

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        try:
            response = self._http.request(method, path, json=body)
        except httpx.HTTPError as exc:
            raise UpstreamUnavailable(self.where, str(exc)) from exc
        if response.status_code not in (200, 202):
            raise _error(response)
        return response.json()


def _error(response: httpx.Response) -> RemoteError:
    try:
        error = response.json()["error"]
        return RemoteError(error["code"], f"server: {error['message']}")
    except (ValueError, KeyError, TypeError):
        return RemoteError(f"HTTP_{response.status_code}", f"server: {response.text[:200]}")
