"""Every JSON body the app takes derives from rag_api.schema.Body, so its booleans and numbers are
JSON's own types; query-string models stay lax (the HTTP tables: tests/kbadmin, tests/test_api.py,
tests/openai_compat/test_openai_errors.py)."""

from __future__ import annotations

import pytest
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError

from rag_api.http.app import create_app
from rag_api.http.openai_errors import app_routes
from rag_api.kbadmin.models import ChunkFilters, ListChunks
from rag_api.schema import Body, field_kind
from rag_api.settings import Settings


def body_models() -> dict[str, object]:
    app = create_app(Settings())
    return {
        f"{sorted(route.methods)[0]} {route.path}": route.body_field.field_info.annotation
        for route in app_routes({"app": app})
        if isinstance(route, APIRoute) and route.body_field is not None
    }


def test_every_route_body_is_a_body() -> None:
    models = body_models()
    assert "POST /query/{collection}" in models and "POST /v1/chat/completions" in models
    loose = {}
    for route, annotation in models.items():
        arms = set(getattr(annotation, "__args__", (annotation,))) - {type(None)}
        if not all(isinstance(arm, type) and issubclass(arm, Body) for arm in arms):
            loose[route] = annotation
    assert not loose, loose


def test_query_string_models_stay_lax() -> None:
    assert not issubclass(ChunkFilters, Body) and issubclass(ListChunks, Body)
    read = ChunkFilters.model_validate({"include_text": "1", "limit": "5"})
    assert (read.include_text, read.limit) == (True, 5)
    with pytest.raises(ValidationError, match="include_text"):
        ListChunks.model_validate({"include_text": "1"})


class Kinds(Body):
    flag: bool = False
    maybe_flag: bool | None = None
    count: int = 0
    ratio: float | None = None
    either: int | str = 0
    anything: object = None


@pytest.mark.parametrize(
    ("field", "kind"),
    [
        ("flag", "flag"),
        ("maybe_flag", "flag"),
        ("count", "number"),
        ("ratio", "number"),
        ("either", None),
        ("anything", None),
    ],
)
def test_the_kind_comes_from_the_annotation(field: str, kind: str | None) -> None:
    assert field_kind(Kinds, field) == kind


@pytest.mark.parametrize(
    ("sent", "taken"),
    [
        ({"flag": True, "maybe_flag": None}, {"flag": True, "maybe_flag": None}),
        ({"flag": "true", "maybe_flag": "false"}, {"flag": True, "maybe_flag": False}),
        ({"count": 3, "ratio": 1}, {"count": 3, "ratio": 1.0}),
        ({"either": "5", "anything": True}, {"either": "5", "anything": True}),
    ],
)
def test_what_a_body_takes(sent: dict, taken: dict) -> None:
    assert Kinds.model_validate(sent).model_dump(include=set(taken)) == taken


@pytest.mark.parametrize(
    "sent",
    [
        {"flag": 0},
        {"flag": 1},
        {"flag": "no"},
        {"flag": "yes"},
        {"flag": "on"},
        {"flag": "True"},
        {"maybe_flag": 0.0},
        {"count": True},
        {"count": "5"},
        {"ratio": False},
        {"ratio": "0.5"},
    ],
)
def test_what_a_body_refuses_names_the_field(sent: dict) -> None:
    (field,) = sent
    with pytest.raises(ValidationError) as info:
        Kinds.model_validate(sent)
    (error,) = info.value.errors()
    assert error["loc"] == (field,)
    assert "must be true or false" in error["msg"] or "must be a number" in error["msg"]


def test_a_plain_model_still_coerces() -> None:
    """What Body changes: the same fields on a BaseModel read 0 as false and "5" as 5."""

    class Plain(BaseModel):
        flag: bool = False
        count: int = 0

    assert Plain.model_validate({"flag": 0, "count": "5"}).model_dump() == {
        "flag": False,
        "count": 5,
    }
