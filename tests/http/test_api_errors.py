"""Validation errors name the invalid field, even a field called `query`, and bad JSON as `body`."""

from fastapi.exceptions import RequestValidationError

from rag_api.http.error_responses import describe_validation


def test_a_field_named_query_keeps_its_name():
    exc = RequestValidationError(
        [{"type": "missing", "loc": ("body", "query"), "msg": "Field required"}]
    )
    assert describe_validation(exc) == ("query: Field required", "query")


def test_invalid_json_is_named_body():
    exc = RequestValidationError(
        [{"type": "json_invalid", "loc": ("body", 1), "msg": "JSON decode error"}]
    )
    assert describe_validation(exc) == ("body: invalid JSON", "body")
