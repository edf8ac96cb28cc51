"""Log output: text lines for a terminal, or one JSON object a line (RAG_LOG_FORMAT=json)."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

from rag_api.observability.request_context import request_id

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# the structured fields a request or indexing log line may carry (`extra=` of the log call)
FIELDS = (
    "request_id",
    "method",
    "route",
    "path",
    "status",
    "latency_ms",
    "collection",
    "event",
    "file",
    "chunks",
    "key_id",
    "action",
)


class RequestIdFilter(logging.Filter):
    """Stamps every record with the id of the request it was logged for (None outside one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            record.request_id = request_id()
        return True


# A message can hold what a client sent (a path with an encoded %0A, a collection name): a line
# break in it would start a line of the client's making in the text log, so the message's control
# characters and Unicode line separators are written escaped (a traceback keeps its lines).
_ESCAPED = {c: f"\\x{c:02x}" for c in (*range(32), 0x7F, 0x85) if c != 9}
_ESCAPED |= {10: "\\n", 13: "\\r", 0x2028: "\\u2028", 0x2029: "\\u2029"}


class TextFormatter(logging.Formatter):
    """The terminal's line, ending in the request id when logged for a request; one record, one
    line (up to its traceback)."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's name)
        return super().formatMessage(record).translate(_ESCAPED)

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        rid = getattr(record, "request_id", None)
        return f"{line} [request_id={rid}]" if rid else line


class JsonFormatter(logging.Formatter):
    """One JSON object a line, for journald/Loki: time, level, logger, message and the fields."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        line |= {f: getattr(record, f) for f in FIELDS if getattr(record, f, None) is not None}
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def configure_logging(level: int, fmt: str = "text") -> None:
    """Log to stderr in `fmt` ("text" or "json"); uvicorn's loggers join in (its access log is
    off: the hub logs each request itself)."""
    root = logging.getLogger()
    if root.handlers:
        return  # configured by the host already (pytest's capture, an embedding program)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler.addFilter(RequestIdFilter())
    root.addHandler(handler)
    root.setLevel(level)


HUB_LOGGERS = ("rag_api",)
QUIET = ("mcp",)  # the MCP SDK logs every request at info; the hub logs each request itself
TRACE = 5  # uvicorn's level below debug (RAG_LOG_LEVEL=trace)


def apply_log_level(name: str) -> None:
    """RAG_LOG_LEVEL in a long-running command (serve, watch): the hub's own loggers log from that
    level, other libraries' from it or info, whichever is higher (uvicorn sets its own loggers
    from the same value); `-v`/`-vv` on the command line lower both."""
    root = logging.getLogger()
    level = TRACE if name == "trace" else logging.getLevelNamesMapping()[name.upper()]
    others = max(level, logging.INFO)
    quiet = max(others, logging.WARNING)
    if root.level < logging.WARNING:  # -v or -vv
        level, others = min(level, root.level), min(others, root.level)
        quiet = others
    for logger in HUB_LOGGERS:
        logging.getLogger(logger).setLevel(level)
    for logger in QUIET:
        logging.getLogger(logger).setLevel(quiet)
    root.setLevel(others)
