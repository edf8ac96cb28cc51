"""The CLI's way into a running server (where it recorded it listens, else RAG_HOST, RAG_PORT):
/v1/ops with RAG_ADMIN_API_KEY, and the reads with RAG_API_KEY."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx

from rag_api.errors import RagError, UpstreamUnavailable
from rag_api.ops.migrate.progress import Bars
from rag_api.ops.server.listening import recorded_url, server_url
from rag_api.settings import Settings

if TYPE_CHECKING:
    from rag_api.answering.models import QueryBody
    from rag_api.evaluation.request import EvalBody

LONG = 4 * 3600.0  # a check with repairs or a migration of a big collection takes a while


class RemoteError(RagError):
    """An error the server answered with, kept with its code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class OpsClient:
    """Operations run by the server that owns the store."""

    def __init__(self, settings: Settings, admin: bool = True) -> None:
        # the address the server recorded beside the store's lock, else RAG_HOST / RAG_PORT
        self.url = recorded_url(settings) or server_url(settings)
        self.where = f"the rag-hub server at {self.url}"
        key = settings.admin_api_key if admin else settings.api_key or settings.admin_api_key
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

    def check(
        self, collection: str | None, repair: bool, sample: int, verify_backups: bool = False
    ) -> dict[str, Any]:
        body = {"collection": collection, "repair": repair, "sample": sample}
        body |= {"verify_backups": verify_backups}
        return self._post("/v1/ops/check", body)

    def plan(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._post("/v1/ops/migrate/plan", body)

    def migrate(self, body: dict[str, Any]) -> dict[str, Any]:
        """Run the migration in the server, drawing its progress; its result, or its error."""
        with Bars() as bars:
            for event in self._events(body):
                if event.get("event") == "progress":
                    bars(event["phase"], event["done"], event["total"])
                elif event.get("event") == "done":
                    return event["result"]
                elif event.get("event") == "error":
                    raise RemoteError(
                        event["error"]["code"], f"server: {event['error']['message']}"
                    )
        raise RemoteError("INTERNAL_ERROR", f"{self.where} ended the migration without a result")

    def _events(self, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        try:
            with self._http.stream("POST", "/v1/ops/migrate", json=body) as response:
                if response.status_code != 200:
                    response.read()
                    raise _error(response)
                for line in response.iter_lines():
                    if line.strip():
                        yield json.loads(line)
        except httpx.HTTPError as exc:
            raise UpstreamUnavailable(self.where, str(exc)) from exc

    def drop_old(self, collection: str) -> dict[str, Any]:
        return self._post("/v1/ops/drop-old", {"collection": collection})

    def backup(self, body: dict[str, Any]) -> dict[str, Any]:
        """Start a backup in the server and wait for its job; its result, or its error."""
        job = self._post("/v1/ops/backup", body)
        while job["status"] not in ("done", "failed"):
            time.sleep(0.5)
            job = self._call("GET", f"/v1/ops/backup/jobs/{job['id']}")
        if job["status"] == "failed":
            raise RemoteError(job["error"]["code"], f"server: {job['error']['message']}")
        return job["result"]

    def restore(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._post("/v1/ops/restore", body)

    def collections(self) -> list[dict[str, Any]]:
        return self._call("GET", "/collections")["collections"]

    def query(self, collection: str, body: QueryBody) -> dict[str, Any]:
        payload = body.model_dump(mode="json", exclude_unset=True)
        return self._post(f"/query/{quote(collection, safe='')}", payload)

    def eval(self, collection: str, body: EvalBody) -> dict[str, Any]:
        payload = body.model_dump(mode="json", exclude_unset=True)
        return self._post(f"/v1/collections/{quote(collection, safe='')}/eval", payload)

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._call("POST", path, body)

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
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
