"""The SDK's MCP server with the hub's manners: a tool error is one `CODE: message` line (the
SDK prefixes "Error executing tool ..." and, for bad arguments, pydantic's own text), an argument
a tool does not take is refused rather than dropped, and a write tool asked of a server that does
not offer it (the key may not write) says why."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import ValidationError

from rag_api.mcp.words import invalid

WRITE_TOOLS = ("upsert_document", "remove_document")


class HubServer(MCPServer):
    """An MCPServer whose tools are added with `add(fn, ...)` (their arguments remembered)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.arguments: dict[str, tuple[str, ...]] = {}

    def add(self, fn: Callable[..., Any], annotations: ToolAnnotations, description: str) -> None:
        """`fn` as a tool named as it is; its arguments are its parameters but the Context."""
        self.add_tool(fn, description=description, annotations=annotations)
        parameters = inspect.signature(fn, eval_str=True).parameters.values()
        self.arguments[fn.__name__] = tuple(
            p.name for p in parameters if p.annotation is not Context
        )

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> CallToolResult | InputRequiredResult:
        takes = self.arguments.get(name)
        if takes is None:
            raise ToolError(_unknown(name, self.arguments))
        extra = [key for key in arguments if key not in takes]
        if extra:
            raise ToolError(
                f"INVALID_REQUEST: {extra[0]}: not an argument of {name} "
                f"(it takes {', '.join(takes) or 'none'})"
            )
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError as exc:  # a bug: the SDK logs it with its traceback
            raise UnexpectedToolError(
                f"INTERNAL_ERROR: {name} failed; the hub's log says why"
            ) from exc.__cause__
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):  # the SDK's check of the arguments
                raise ToolError(invalid(cause, arguments)) from cause
            if isinstance(cause, ToolError):  # the tool's own words, without the SDK's prefix
                raise ToolError(str(cause)) from cause
            raise


def _unknown(name: str, offered: dict[str, tuple[str, ...]]) -> str:
    if name in WRITE_TOOLS:
        return (
            f"FORBIDDEN: {name} needs a key that may write a collection (RAG_ADMIN_API_KEY, or "
            "`rag-hub keys create NAME --write COLLECTION`); this key only reads"
        )
    return f"INVALID_REQUEST: no tool '{name}' (the tools: {', '.join(offered)})"
