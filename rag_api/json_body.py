"""Every request body of this API is JSON: `curl -d '{...}'` (which labels it a form) works too."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

# What a client sends when it did not say: curl -d, a bare HTML form post, or no header at all.
UNLABELLED = {b"", b"application/x-www-form-urlencoded", b"text/plain"}


class JsonBodies:
    """Relabels an unlabelled request body as JSON before routing; no route here takes a form.
    A body that is not JSON then gets the usual 422 in the one error shape."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in ("POST", "PUT", "PATCH"):
            label = dict(scope["headers"]).get(b"content-type", b"")
            if label.split(b";")[0].strip().lower() in UNLABELLED:
                headers = [(k, v) for k, v in scope["headers"] if k != b"content-type"]
                headers.append((b"content-type", b"application/json"))
                scope = {**scope, "headers": headers}
        await self.app(scope, receive, send)
