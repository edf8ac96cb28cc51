"""The key `rag-hub mcp` works with on the store it opened itself (no hub running): the hub's own
keyring says who it is, as the server says it of a request's bearer key, so a key's scope is the
same whether a server is up or not. Keys set and none given, or one the hub does not know, stop
the command before it serves anything; with no key set at all, everything is open, as on the
server."""

from __future__ import annotations

from rag_api.access.grant import Principal
from rag_api.access.keyring import Keyring
from rag_api.errors import Unauthorized

CLIENT = "rag-hub mcp"  # what the keyring counts a bad key against


class LocalKey:
    """`key` (from `given`: where it was read, for the messages) checked now, and again on every
    call: a key revoked or expired while the command runs stops there, as on the server."""

    def __init__(self, keyring: Keyring, key: str | None, given: str) -> None:
        self.keyring, self.key = keyring, key
        principal = self.principal()
        if principal is None and key is None:
            raise Unauthorized(
                f"this hub has keys ({_configured(keyring)}) and rag-hub mcp was given none: "
                "pass one with --key or RAG_KEY (a scoped key: rag-hub keys create NAME --read "
                "COLLECTION); without a key it opens nothing"
            )
        if principal is None:
            raise Unauthorized(
                f"the key in {given} is not one this hub knows ({_configured(keyring)}): "
                "mistyped, revoked or expired (rag-hub keys list shows the live ones)"
            )
        self.first = principal

    def principal(self) -> Principal | None:
        """Who the key is now (None: no longer a key the hub knows)."""
        return self.keyring.principal(self.key, CLIENT)


def _configured(keyring: Keyring) -> str:
    named = [principal.name for _, principal in keyring.globals]
    if scoped := keyring.scoped_keys():
        named.append(f"{scoped} scoped key(s) in {keyring.file}")
    return ", ".join(named) or f"every key in {keyring.file} revoked or expired"
