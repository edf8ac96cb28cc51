"""moto's S3 server (a real S3 REST API) on loopback, counting the requests it answers: object
reads (GET of a key) and listings."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from moto.moto_server.threaded_moto_server import ThreadedMotoServer
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import make_server

KEY_ID, SECRET = "test-key-id", "test-secret-do-not-log"


class S3Server(ThreadedMotoServer):
    """`counts`: ("get", key) per object read, ("list", bucket) per listing page; `refuse`:
    a predicate of (method, path, query) answered 403 AccessDenied (a changed policy)."""

    def __init__(self) -> None:
        super().__init__("127.0.0.1", 0, verbose=False)
        self.counts: Counter[tuple[str, str]] = Counter()
        self.refuse: Callable[[str, str, str], bool] = lambda method, path, query: False
        self._lock = threading.Lock()

    def _server_entry(self) -> None:
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line a request otherwise
        app = DomainDispatcherApplication(create_backend_app)
        self._server = make_server(
            self._ip_address,
            self._port,
            self._counting(app),
            True,
            request_handler=MotoRequestHandler,
        )
        self._server_ready_event.set()
        self._server.serve_forever()

    def _counting(self, app: Any) -> Callable[..., Iterable[bytes]]:
        def counted(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")
            query = environ.get("QUERY_STRING", "")
            if self.refuse(method, path, query):
                body = b"<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
                start_response("403 Forbidden", [("Content-Type", "application/xml")])
                return [body]
            bucket, _, key = path.lstrip("/").partition("/")
            with self._lock:
                if method == "GET" and key:
                    self.counts[("get", key)] += 1
                elif method == "GET" and "list-type" in query:
                    self.counts[("list", bucket)] += 1
            return app(environ, start_response)

        return counted

    @property
    def url(self) -> str:
        host, port = self.get_host_and_port()
        return f"http://{host}:{port}"

    def gets(self) -> int:
        return sum(n for (what, _), n in self.counts.items() if what == "get")

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.url,
            region_name="us-east-1",
            aws_access_key_id=KEY_ID,
            aws_secret_access_key=SECRET,
        )
