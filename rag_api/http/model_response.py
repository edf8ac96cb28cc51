"""An answer model sent as it is: the fields the domain set, in the model's order, serialised in
the worker thread that built it (FastAPI would check a returned model again on the way out, for a
sync route in a second hop to the thread pool). The route keeps its `response_model`, so
/openapi.json documents the same schema."""

from __future__ import annotations

from fastapi.responses import Response

from rag_api.schema import Answer

STREAMED = {200: {"content": {"text/event-stream": {}}}}  # the same route with `stream: true`


def model_response(answer: Answer, status_code: int = 200) -> Response:
    """`answer` as JSON: the fields that were set (absent ones stay absent, never null)."""
    body = type(answer).__pydantic_serializer__.to_json(answer, by_alias=True, exclude_unset=True)
    return Response(body, status_code=status_code, media_type="application/json")
