"""A bad argument in the hub's words: each pydantic error of a tool's arguments becomes one
`where: what` clause of an `INVALID_REQUEST:` line, named by the argument's path in what the agent
sent. The errors are pydantic's own, from validating ARGS (a tool's arguments, a hub model's)."""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, Json, ValidationError, field_validator

from rag_api.answering.models import Filters as HubFilters
from rag_api.mcp.words import invalid
from rag_api.metadata import MAX_KEYS


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


class Filters(BaseModel):
    model_config = ConfigDict(extra="forbid")

    min_quality: float = Field(default=0.0, ge=0.0, le=1.0)
    types: list[Literal["prose", "table"]] = []
    metadata: dict[str, str | float | bool] = {}
    year: int = 0


class Needs(BaseModel):
    name: str


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(default="q", min_length=1, max_length=10)
    code: str = Field(default="ab", min_length=2, pattern=r"^[a-z]+$")
    top_k: int = Field(default=5, gt=0, lt=100)
    exact: bool = False
    colour: Colour = Colour.RED
    kind: Literal["a", "b"] = "a"
    tags: list[str] = Field(default=[], min_length=1, max_length=2)
    labels: dict[str, str] = Field(default={}, min_length=1)
    filters: Filters | None = None
    needs: list[Needs] = []
    either: str | int = "x"
    amount: int | float = 0
    obj: dict | Filters = {}
    mixed: int | Literal["all"] = 0
    pick: int | Needs = 0
    raw: Json[dict] = "{}"
    when: None = None
    tidy: str = "t"
    checked: str = "c"

    @field_validator("tidy")
    @classmethod
    def _tidy(cls, value: str) -> str:
        if value != "t":
            raise ValueError("must be tidy")
        return value

    @field_validator("checked")
    @classmethod
    def _checked(cls, value: str) -> str:
        if value != "c":  # as a bare `assert` says it (pytest rewrites this module's)
            raise AssertionError("must be checked")
        return value


def said(given: Any, names: dict[str, str] | None = None, model: type[BaseModel] = Args) -> str:
    with pytest.raises(ValidationError) as raised:
        model.model_validate(given)
    return invalid(raised.value, given, names)


SAID = [
    # one kind of value
    ({"query": 3}, "query: must be a string"),
    ({"top_k": "many"}, "top_k: must be an integer"),
    ({"top_k": [1]}, "top_k: must be an integer"),
    ({"filters": {"min_quality": "high"}}, "filters.min_quality: must be a number"),
    ({"filters": {"min_quality": [0.5]}}, "filters.min_quality: must be a number"),
    ({"exact": "maybe"}, "exact: must be true or false"),
    ({"exact": [True]}, "exact: must be true or false"),
    ({"tags": "a"}, "tags: must be a list"),
    ({"labels": ["a"]}, "labels: must be an object"),
    ({"filters": 3}, "filters: must be an object"),
    ({"needs": [3]}, "needs.0: must be an object"),
    ({"when": 1}, "when: must be null"),
    # a union's members, said once
    ({"either": []}, "either: must be a string or an integer"),
    ({"amount": "x"}, "amount: must be a number"),  # an integer is a number
    ({"obj": 3}, "obj: must be an object"),  # a dict or a model: both objects
    (
        {"filters": {"metadata": {"year": []}}},
        "filters.metadata.year: must be a string, a number or a boolean",
    ),
    ({"mixed": "some"}, "mixed: must be one of 'all'"),  # the member that is not a kind
    # bounds
    ({"top_k": 0}, "top_k: must be > 0"),
    ({"top_k": 100}, "top_k: must be < 100"),
    ({"filters": {"min_quality": 2}}, "filters.min_quality: must be ≤ 1.0"),
    ({"filters": {"min_quality": -1}}, "filters.min_quality: must be ≥ 0.0"),
    ({"top_k": 1.5}, "top_k: must be a whole number"),
    # lengths
    ({"query": ""}, "query: must not be empty"),
    ({"code": "a"}, "code: must have at least 2 characters"),
    ({"query": "x" * 12}, "query: must have at most 10 characters (it has 12)"),
    ({"tags": []}, "tags: must have at least 1 items"),
    ({"tags": ["a", "b", "c"]}, "tags: must have at most 2 items (it has 3)"),
    ({"labels": {}}, "labels: must have at least 1 keys"),
    # choices and forms
    ({"colour": "green"}, "colour: must be one of 'red' or 'blue'"),
    ({"kind": "c"}, "kind: must be one of 'a' or 'b'"),
    ({"filters": {"types": ["prose", "x"]}}, "filters.types.1: must be one of 'prose' or 'table'"),
    ({"filters": {"types": ["x"]}}, "filters.types.0: must be one of 'prose' or 'table'"),
    ({"code": "AB"}, "code: must match ^[a-z]+$"),
    ({"raw": "{x"}, "raw: is not valid JSON"),
    # fields
    ({"filters": {"colour": 1}}, "filters.colour: is not a field here"),
    ({"needs": [{}]}, "needs.0.name: is required"),
    ({"needs": [{"name": 3}]}, "needs.0.name: must be a string"),
    # a union member's name is left out, the path inside the member kept
    ({"pick": {"name": 3}}, "pick: must be an integer; pick.name: must be a string"),
    # a validator's own words, without pydantic's prefix
    ({"tidy": "u"}, "tidy: must be tidy"),
    ({"checked": "d"}, "checked: must be checked"),
    # several arguments: one clause each, in pydantic's order
    ({"top_k": "many", "query": 3}, "query: must be a string; top_k: must be an integer"),
]


@pytest.mark.parametrize(("given", "clause"), SAID)
def test_each_bad_argument_is_one_clause_in_the_hubs_words(given: Any, clause: str) -> None:
    assert said(given) == f"INVALID_REQUEST: {clause}"


def test_only_text_says_how_long_it_is() -> None:
    # bytes, as a caller in Python (the CLI) may give: not characters to count
    assert said({"query": b"x" * 12}) == "INVALID_REQUEST: query: must have at most 10 characters"


def test_a_missing_argument_keeps_its_name() -> None:
    assert said({}, model=Needs) == "INVALID_REQUEST: name: is required"


def test_an_object_sent_as_json_text_is_named_by_its_path_inside() -> None:
    # the SDK parses the text before validating it (Claude Desktop sends objects as strings)
    with pytest.raises(ValidationError) as raised:
        Args.model_validate({"filters": {"min_quality": 2}})
    given = {"filters": '{"min_quality": 2}'}
    assert invalid(raised.value, given) == "INVALID_REQUEST: filters.min_quality: must be ≤ 1.0"
    # text that is not JSON names nothing inside it
    unreadable = {"filters": '{"min_quality": 2'}
    assert invalid(raised.value, unreadable) == "INVALID_REQUEST: filters: must be ≤ 1.0"


def test_a_hub_models_field_is_named_as_the_tools_argument() -> None:
    names = {"filters": "where", "query": "text"}
    assert (
        said({"filters": {"year": "x"}}, names) == "INVALID_REQUEST: where.year: must be an integer"
    )
    assert said({"query": ""}, names) == "INVALID_REQUEST: text: must not be empty"
    assert said({"top_k": 0}, names) == "INVALID_REQUEST: top_k: must be > 0"  # not renamed


def test_errors_at_the_root_or_without_any_are_said_plainly() -> None:
    assert said(3, model=Needs) == "INVALID_REQUEST: arguments: must be an object"
    empty = ValidationError.from_exception_data("Args", [])
    assert invalid(empty, {}) == "INVALID_REQUEST: invalid arguments"


def test_an_error_pydantic_words_its_own_way_keeps_its_message() -> None:
    error = {"type": "url_parsing", "loc": ("link",), "input": "x", "ctx": {"error": "bad"}}
    exc = ValidationError.from_exception_data("Args", [error])
    assert invalid(exc, {"link": "x"}) == "INVALID_REQUEST: link: Input should be a valid URL, bad"


def test_an_object_with_too_many_keys_says_how_many_it_has() -> None:
    """pydantic gives a dict's too_long no actual_length (search's filters.metadata)."""
    metadata = {f"k{i}": "v" for i in range(MAX_KEYS + 1)}
    assert said({"metadata": metadata}, model=HubFilters) == (
        f"INVALID_REQUEST: metadata: must have at most {MAX_KEYS} keys (it has {MAX_KEYS + 1})"
    )
