"""The bases of every request and answer model: `Body` holds a request's scalars to JSON's own
types; `Answer` declares what a route answers (nothing undeclared).

Pydantic's lax mode would read `"dynamic": 0` or `"no"` as false and `"relative_threshold": true`
or `"top_k": "5"` as numbers; a body's fields say what they take instead:
- a boolean field takes a JSON boolean, or the string "true" or "false" (curl and shell scripts
  send those); any number or other string is refused, naming the field;
- a number field refuses booleans (true is not 1) and strings; an integer stays a float.
Everything else (enums, literals, nested models, strings) keeps pydantic's own checks, so a model
says nothing but `Body` to get this. Query-string models (GET parameters, always strings) and the
collections.yaml models (rag_api.config) do not derive from it.
"""

from __future__ import annotations

import json
import types
from functools import cache
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

from rag_api.config import ChunkType

Kind = Literal["flag", "number"] | None
FLAG_WORDS = {"true": True, "false": False}
SHOWN_MAX = 40  # characters of a refused value the message repeats


class Body(BaseModel):
    """A request body: its boolean and number fields take JSON's own types (the module's rules)."""

    @field_validator("*", mode="before")
    @classmethod
    def _json_scalars(cls, value: Any, info: ValidationInfo) -> Any:
        kind = field_kind(cls, info.field_name)
        if kind == "flag" and value is not None:
            return flag(value)
        if kind == "number" and isinstance(value, bool | str):
            raise ValueError(f"must be a number, not {shown(value)}")
        return value


def flag(value: Any) -> bool:
    """A boolean as a body may give it (also a multipart form's field); ValueError otherwise."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in FLAG_WORDS:
        return FLAG_WORDS[value]
    raise ValueError(f'must be true or false (or the string "true" or "false"), not {shown(value)}')


@cache
def field_kind(model: type[BaseModel], name: str | None) -> Kind:
    """ "flag" for a bool field, "number" for an int or float one (either optionally None)."""
    field = model.model_fields.get(name or "")
    if field is None:
        return None
    arms = set(_arms(field.annotation)) - {type(None)}
    if arms == {bool}:
        return "flag"
    if arms and arms <= {int, float}:
        return "number"
    return None


def _arms(annotation: Any) -> list[Any]:
    """The types a value of `annotation` may be: unions split, Annotated's metadata dropped."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _arms(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return [arm for arg in get_args(annotation) for arm in _arms(arg)]
    return [annotation]


def shown(value: Any) -> str:
    """A refused value as JSON, or its kind when that is long."""
    text = json.dumps(value, default=str)
    if len(text) <= SHOWN_MAX:
        return text
    return {str: "a string", list: "a list", dict: "an object"}.get(type(value), "a long value")


class Answer(BaseModel):
    """What a route answers, built by the domain and serialised as it is: the fields it set, in
    the model's order (rag_api.http.model_response); a field the model does not declare is an error."""

    model_config = ConfigDict(extra="forbid")


# a chunk's labels (docs/labels.md), wherever a chunk is shown; absent on a chunk without them
# (written before labels, or by another tool)
LabelType = ChunkType | None  # prose, list, table, code, qa, heading or boilerplate
LabelQuality = float | None  # 0..1
LabelReasons = list[str] | None  # what lowered the quality: too_short, broken_extraction, ...
