"""The OpenAI routes' errors in OpenAI's shape, so SDKs raise their usual exceptions: malformed
bodies, the body limit, unknown models, missing keys, every route refused or wrong-method; the
hub's other routes keep the hub's shape."""

from __future__ import annotations

import httpx
import openai
import pytest

from tests.conftest import assert_error_shape, hash_collection, write_config
from tests.support.openai_support import REFUND, ask


def deep(depth: int) -> list:
    value: list = ["hi"]
    for _ in range(depth - 1):
        value = [value]
    return value


MALFORMED = [
    ("responses", {"model": "docs"}, "input", "Field required"),
    ("responses", {"model": "docs", "input": 5}, "input", "string or a list"),
    (
        "responses",
        {"model": "docs", "input": [{"role": "user", "content": [{"type": "input_vid"}]}]},
        "input[0].content[0].type",
        "unsupported content part type 'input_vid'",
    ),
    (
        "responses",
        {"model": "docs", "input": [{"role": "robot", "content": "hi"}]},
        "input[0].role",
        "must be one of",
    ),
    (
        "responses",
        {"model": "docs", "input": "hi", "tools": [{"type": "web_search"}]},
        "tools[0].type",
        "only 'function' tools",
    ),
    ("chat/completions", {"model": "docs"}, "messages", "Field required"),
    ("chat/completions", {"model": "docs", "messages": []}, "messages", "at least 1"),
    (
        "chat/completions",
        {"model": "docs", "messages": [{"role": "user", "content": [{"type": "video"}]}]},
        "messages[0].content[0].type",
        "unsupported content part type 'video'",
    ),
    (
        "chat/completions",
        {"model": "docs", "messages": [{"role": "user", "content": [{"type": "text"}]}]},
        "messages[0].content[0]",
        "needs a 'text' field",
    ),
    (
        "chat/completions",
        {"model": "docs", "messages": [{"role": "user", "content": 5}]},
        "messages[0].content",
        "string or a list of content parts",
    ),
    (
        "chat/completions",
        {"model": "docs", "messages": [{"role": "wizard", "content": "hi"}]},
        "messages[0].role",
        "Input should be",
    ),
    (
        "chat/completions",
        {"model": "docs", "messages": [{"role": "system", "content": "Be brief."}]},
        "messages",
        "no user message",
    ),
    (
        "chat/completions",
        {"model": "docs", "messages": ask("hi"), "temperature": 3},
        "temperature",
        "less than or equal to 2",
    ),
    ("chat/completions", {"model": "docs", "messages": ask("hi"), "n": 2}, "n", "must be 1"),
    # booleans are JSON's (or "true"/"false"), numbers never booleans or strings (rag_api.schema)
    (
        "chat/completions",
        {"model": "docs", "messages": ask("hi"), "stream": "yes"},
        "stream",
        "must be true or false",
    ),
    (
        "chat/completions",
        {"model": "docs", "messages": ask("hi"), "stream": 1},
        "stream",
        "must be true or false",
    ),
    (
        "chat/completions",
        {"model": "docs", "messages": ask("hi"), "stream_options": {"include_usage": "no"}},
        "stream_options.include_usage",
        "must be true or false",
    ),
    (
        "chat/completions",
        {"model": "docs", "messages": ask("hi"), "temperature": True},
        "temperature",
        "must be a number",
    ),
    (
        "chat/completions",
        {"model": "docs", "messages": ask("hi"), "max_tokens": "5"},
        "max_tokens",
        "must be a number",
    ),
    ("responses", {"model": "docs", "input": "hi", "store": 0}, "store", "must be true or false"),
    ("responses", {"model": "docs", "input": "hi", "top_p": "1"}, "top_p", "must be a number"),
    # values Python's JSON parser accepts but nothing downstream can hold (rag_api.http.json_body)
    (
        "chat/completions",
        '{"model": "docs", "messages": [{"role": "user", "content": "\\ud800"}]}',
        "messages[0].content",
        "lone surrogate",
    ),
    ("responses", '{"model": "docs", "input": "hi \\udc00"}', "input", "lone surrogate"),
    ("responses", {"model": "docs", "input": deep(300)}, "input", "nested more than 64"),
    (
        "chat/completions",
        {"model": "docs", "messages": [{"role": "user", "content": deep(400)}]},
        "messages",
        "nested more than 64",
    ),
    (
        "chat/completions",
        '{"model": "docs", "messages": [], "temperature": NaN}',
        "temperature",
        "NaN",
    ),
]


@pytest.mark.parametrize(("route", "body", "param", "message"), MALFORMED)
def test_malformed_requests_are_400_in_openai_shape(server, route, body, param, message):
    sent = {"json": body} if isinstance(body, dict) else {"content": body.encode()}
    response = httpx.post(f"{server.url}/v1/{route}", **sent)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert (error["type"], error["code"], error["param"]) == (
        "invalid_request_error",
        "invalid_request",
        param,
    )
    assert message in error["message"]


def test_a_body_over_the_limit_is_413_in_openai_shape_declared_or_streamed(server):
    huge = b'{"model": "docs", "input": "' + b"x" * (1024 * 1024) + b'"}'
    for content in (huge, iter([huge[:600_000], huge[600_000:]])):  # Content-Length / chunked
        response = httpx.post(server.url + "/v1/responses", content=content)
        assert response.status_code == 413
        error = response.json()["error"]
        assert (error["type"], error["code"]) == ("invalid_request_error", "payload_too_large")


def test_sdk_raises_bad_request_and_other_routes_keep_the_hub_shape(server, client):
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(
            model="docs", messages=[{"role": "user", "content": [{"type": "video"}]}]
        )
    assert info.value.param == "messages[0].content[0].type"
    invalid_json = httpx.post(
        server.url + "/v1/responses", content=b"{", headers={"content-type": "application/json"}
    )
    assert invalid_json.status_code == 400 and invalid_json.json()["error"]["param"] == "body"
    wrong_method = httpx.get(server.url + "/v1/chat/completions").json()["error"]
    assert wrong_method["type"] == "invalid_request_error"
    hub_shape = httpx.post(server.url + "/query/docs", json={}, headers={"X-Request-ID": "q-1"})
    assert hub_shape.json() == {
        "error": {
            "code": "INVALID_REQUEST",
            "message": "query: Field required",
            "request_id": "q-1",
        }
    }


def test_unknown_model_is_404_when_configured(tmp_path, make_settings, serve):
    config = write_config(
        tmp_path / "collections.yaml", {"docs": hash_collection()}, unknown_model="error"
    )
    live = serve(make_settings(config, "memory"))
    client = openai.OpenAI(base_url=live.url + "/v1", api_key="x", max_retries=0)
    with pytest.raises(openai.NotFoundError) as info:
        client.chat.completions.create(model="gpt-4o", messages=ask(REFUND))
    assert info.value.code == "model_not_found" and "unknown_model: error" in info.value.message
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="gpt-4o", input=REFUND)
    empty = client.responses.create(model="docs", input=REFUND)  # nothing indexed: no evidence
    assert empty.output_text == "No relevant information was found to answer this question."


def test_bearer_key_is_required_when_set(tmp_path, make_settings, serve):
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection()})
    live = serve(make_settings(config, "memory", api_key="reader-key", admin_api_key="admin-key"))
    wrong = openai.OpenAI(base_url=live.url + "/v1", api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as info:
        wrong.models.list()
    assert info.value.code == "invalid_api_key"
    for route in ("/v1/chat/completions", "/responses"):
        refused = httpx.post(live.url + route, json={"model": "docs", "input": REFUND})
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
        assert refused.json()["error"]["type"] == "invalid_request_error"
    for key in ("reader-key", "admin-key"):
        client = openai.OpenAI(base_url=live.url + "/v1", api_key=key, max_retries=0)
        assert [m.id for m in client.models.list()] == ["docs"]
        assert client.responses.create(model="docs", input=REFUND).status == "completed"


def test_every_openai_route_answers_errors_in_openai_shape(tmp_path, make_settings, serve):
    """The shape comes from the route: each route of the OpenAI router, refused (401) or called
    with the wrong method (405), answers OpenAI's error; a hub route keeps the hub's shape."""
    from rag_api.http.endpoints.openai import router

    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection()})
    live = serve(make_settings(config, "memory", api_key="reader-key"))
    methods: dict[str, set[str]] = {}  # path: the methods its routes take
    for route in router.routes:
        path = route.path.replace("{model:any}", "docs").replace(
            "{response_id}", "resp_" + "0" * 32
        )
        methods.setdefault(path, set()).update(route.methods)
    calls = [(method, path) for path, taken in methods.items() for method in taken]
    assert len(calls) == 14, calls
    key = {"Authorization": "Bearer reader-key"}
    with live.client() as client:
        for method, path in calls:
            for response, status, code in (
                (client.request(method, path, json={}), 401, "invalid_api_key"),
                (client.request("PATCH", path, headers=key), 405, "method_not_allowed"),
            ):
                error = response.json()["error"]
                assert response.status_code == status, (method, path, response.text)
                assert set(error) == {"message", "type", "param", "code"}, (path, error)
                assert (error["type"], error["code"]) == ("invalid_request_error", code)
                if status == 405:  # RFC 9110: a 405 lists the methods the route does take
                    assert set(response.headers["allow"].split(", ")) == methods[path]
        assert_error_shape(client.get("/collections"), 401, "UNAUTHORIZED")
        wrong = client.delete("/collections", headers=key)
        assert_error_shape(wrong, 405, "METHOD_NOT_ALLOWED")
        assert wrong.headers["allow"] == "GET"


def test_a_model_name_with_a_line_break_is_an_unknown_model(tmp_path, make_settings, serve):
    """`GET /v1/models/{model}` takes any name: one with an encoded line break (%0A) is an unknown
    model in OpenAI's shape, not a hub-shaped "no route" 404."""
    config = write_config(
        tmp_path / "collections.yaml", {"docs": hash_collection()}, unknown_model="error"
    )
    live = serve(make_settings(config, "memory"))
    client = openai.OpenAI(base_url=live.url + "/v1", api_key="x", max_retries=0)
    with pytest.raises(openai.NotFoundError) as info:
        client.models.retrieve("docs\nforged")
    assert info.value.code == "model_not_found", info.value.body
    with live.client() as http:
        response = http.get("/models/a%0Ab%0D")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "model_not_found", response.text


def test_an_unknown_v1_path_is_404_in_openai_shape(server, client):
    """An OpenAI client's guess at an endpoint the hub lacks gets OpenAI's 404 (the SDK raises
    NotFoundError); an unknown path of the hub's own /v1 families, or outside /v1, keeps the hub's."""
    with pytest.raises(openai.NotFoundError) as info:
        client.audio.speech.create(model="docs", voice="alloy", input="hi")
    assert info.value.code == "not_found"
    for method, path in (("GET", "/v1/files"), ("POST", "/v1/completions"), ("GET", "/v1")):
        response = httpx.request(method, server.url + path, json={})
        assert response.status_code == 404, path
        error = response.json()["error"]
        assert set(error) == {"message", "type", "param", "code"}, path
        assert (error["type"], error["code"]) == ("invalid_request_error", "not_found")
        assert error["message"] == f"no route {method} {path}"
    for path in ("/v1/rag/nope", "/v1/ops/nope", "/nope"):
        assert_error_shape(httpx.get(server.url + path), 404, "NOT_FOUND")
