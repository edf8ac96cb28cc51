"""A route's answer checked against its declared model and serialised in the worker thread.

FastAPI checks a returned dict against the route's `response_model` on the way out; for a sync
route it does that in a second hop to the thread pool, and for every route on the event loop,
where it delays every other request. The hot read routes (`/query`, `/v1/rag/*`) run their work in
a worker thread already: they call `declared()` there and return the bytes, which FastAPI sends as
they are. The check and the bytes are FastAPI's own (the model validates the dict, then pydantic
serialises it with exclude_unset, in the model's key order), and the decorator keeps
`response_model`, so /openapi.json documents the same schema.
"""

from __future__ import annotations

from typing import Any

from fastapi.exceptions import ResponseValidationError
from fastapi.responses import Response
from pydantic import BaseModel, ValidationError


def declared(model: type[BaseModel], answer: dict[str, Any]) -> Response:
    """`answer` as its declared `model` serialises it: the keys the route set, in the model's
    order. A key the model does not declare, or a wrong type, fails the request (500) exactly as
    FastAPI's own check would."""
    try:
        checked = model.model_validate(answer)
    except ValidationError as exc:
        raise ResponseValidationError(exc.errors(include_url=False), body=answer) from exc
    body = model.__pydantic_serializer__.to_json(checked, by_alias=True, exclude_unset=True)
    return Response(body, media_type="application/json")
