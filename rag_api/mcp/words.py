"""Bad arguments in the hub's words: a pydantic ValidationError (the SDK's check of a tool's
arguments, or a hub model's) as one `INVALID_REQUEST: top_k: must be ≤ 100` line naming each
argument, never pydantic's own text (its type names and pydantic.dev links mean nothing to an
agent). A union's several "should be a string / an integer / ..." become one sentence."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

KINDS = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "a boolean",
    "bool_parsing": "a boolean",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "none_required": "null",
}


def invalid(exc: ValidationError, given: Any, names: dict[str, str] | None = None) -> str:
    """`INVALID_REQUEST: where: what; ...` for the errors of validating `given`; `names` renames
    a hub model's field to the tool's argument (`source_prefix` -> `source`)."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for error in exc.errors(include_url=False):
        where = _where(error, given)
        head, dot, tail = where.partition(".")
        grouped.setdefault((names or {}).get(head, head) + dot + tail, []).append(error)
    said = [f"{where}: {_what(errors)}" for where, errors in grouped.items()]
    return "INVALID_REQUEST: " + ("; ".join(said) or "invalid arguments")


def _where(error: dict[str, Any], given: Any) -> str:
    """The argument's path in `given`; the parts pydantic adds that are not in it (a union's
    member names, '[key]') are left out, but a missing field keeps its name."""
    loc = list(error.get("loc", ()))
    parts: list[str] = []
    value = given
    for i, part in enumerate(loc):
        if isinstance(value, str):  # the SDK reads an object given as JSON text (Claude Desktop)
            value = _parsed(value)
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
            value = value[part]
        elif i == len(loc) - 1 and error.get("type") == "missing":
            pass
        else:
            continue
        parts.append(str(part))
    return ".".join(parts) or "arguments"


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def _what(errors: list[dict[str, Any]]) -> str:
    kinds = list(dict.fromkeys(KINDS[e["type"]] for e in errors if e["type"] in KINDS))
    if len(kinds) == len(errors) == 1:
        return "must be true or false" if kinds == ["a boolean"] else f"must be {kinds[0]}"
    if len(errors) == sum(e["type"] in KINDS for e in errors):  # one per member of a union
        if "a number" in kinds and "an integer" in kinds:
            kinds.remove("an integer")
        return "must be " + (" or ".join(kinds) if len(kinds) < 3 else _listed(kinds))
    return _word(next(e for e in errors if e["type"] not in KINDS))


def _listed(kinds: list[str]) -> str:
    return ", ".join(kinds[:-1]) + " or " + kinds[-1]


def _word(error: dict[str, Any]) -> str:
    kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return "is not a field here"
    if kind in ("less_than_equal", "greater_than_equal", "less_than", "greater_than"):
        sign, bound = {
            "less_than_equal": ("≤", "le"),
            "greater_than_equal": ("≥", "ge"),
            "less_than": ("<", "lt"),
            "greater_than": (">", "gt"),
        }[kind]
        return f"must be {sign} {ctx[bound]}"
    if kind == "string_too_short":
        n = ctx.get("min_length", 1)
        return "must not be empty" if n == 1 else f"must have at least {n} characters"
    if kind == "string_too_long":
        has = f" (it has {len(value)})" if isinstance(value, str) else ""
        return f"must have at most {ctx.get('max_length')} characters{has}"
    if kind in ("too_short", "too_long"):
        what = "keys" if isinstance(value, dict) else "items"
        if kind == "too_short":
            return f"must have at least {ctx.get('min_length')} {what}"
        has = ctx.get("actual_length")  # pydantic gives none for a dict
        if has is None and isinstance(value, dict | list | tuple | set):
            has = len(value)
        return f"must have at most {ctx.get('max_length')} {what} (it has {has})"
    if kind in ("literal_error", "enum"):
        return f"must be one of {ctx.get('expected')}"
    if kind == "string_pattern_mismatch":
        return f"must match {ctx.get('pattern')}"
    if kind == "int_from_float":
        return "must be a whole number"
    if kind == "json_invalid":
        return "is not valid JSON"
    message = str(error.get("msg", "is invalid"))
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    return message
