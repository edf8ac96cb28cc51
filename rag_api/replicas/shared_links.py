"""The secret that signs passage links (rag_api.access.links) in a deployment of replicas: one for
every node, in Qdrant's system collection, so a link a reader gave opens on any other. The
writer makes it; a reader that asks before any writer did refuses links until then."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Callable

from rag_api.access.links import SECRET_BYTES, LinkRefused
from rag_api.store.system import SystemDocs

KIND, KEY = "secret", "passage-links"


def shared_secret(docs: SystemDocs, makes: bool) -> Callable[[], bytes]:
    """The deployment's secret, read once found; `makes`: the writer makes it if none is there."""
    found: list[bytes] = []

    def secret() -> bytes:
        if not found:
            document = docs.get(KIND, KEY)
            if document is None and makes:
                docs.put(
                    KIND,
                    KEY,
                    {"secret": base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()},
                )
                document = docs.get(KIND, KEY)
            if document is None:
                raise LinkRefused("passage links open once the deployment's writer has started")
            found.append(base64.b64decode(document["secret"]))
        return found[0]

    return secret
