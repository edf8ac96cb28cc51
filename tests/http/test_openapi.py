"""/openapi.json documents what clients get: each main route's real answer is its declared model,
key for key (a round trip through the model changes nothing)."""

from __future__ import annotations

from importlib import metadata

import httpx
import pytest

from rag_api.answering import models as query_models
from rag_api.catalog import CollectionList
from rag_api.http.endpoints.ops import Events
from rag_api.http.error_responses import ErrorBody
from rag_api.http.openai_errors import OpenAIErrorBody
from rag_api.kbadmin import models as kb_models
from rag_api.openai_compat import models as openai_models
from rag_api.ops.server.readiness import Ready
from rag_api.schema import Answer
from rag_api.settings import Settings
from tests.conftest import hash_collection, write_config
from tests.support.openai_support import KB, REFUND, start_indexed, write_kb

ASK = {"model": "docs", "messages": [{"role": "user", "content": REFUND}]}
CALLS = [  # (method, route in the schema, path, body)
    ("GET", "/ready", "/ready", None),
    ("GET", "/collections", "/collections", None),
    ("POST", "/query/{collection}", "/query/docs", {"query": REFUND}),
    ("POST", "/query/{collection}", "/query/docs", {"query": REFUND, "generate": False}),
    ("POST", "/query/{collection}", "/query/docs", {"query": "zzzz qqqq", "threshold": 0.99}),
    ("GET", "/v1/models", "/v1/models", None),
    ("GET", "/v1/models/{model}", "/v1/models/docs", None),
    ("POST", "/v1/chat/completions", "/v1/chat/completions", ASK),
    ("POST", "/v1/responses", "/v1/responses", {"model": "docs", "input": REFUND}),
    ("GET", "/v1/rag/status", "/v1/rag/status", None),
    ("GET", "/v1/rag/sources", "/v1/rag/sources", None),
    ("GET", "/v1/rag/chunks", "/v1/rag/chunks?include_text=true", None),
    ("POST", "/v1/rag/chunks/list", "/v1/rag/chunks/list", {"query": REFUND}),
    ("POST", "/v1/rag/search", "/v1/rag/search", {"query": REFUND}),
    ("POST", "/v1/rag/context", "/v1/rag/context", {"query": REFUND}),
]


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    root = tmp_path_factory.mktemp("openapi")
    config = write_config(
        root / "collections.yaml", {"docs": hash_collection(write_kb(root / "kb"))}
    )
    settings = {"config": config, "data_dir": root / "data", "ollama_url": "http://127.0.0.1:9"}
    hub, server = start_indexed(Settings(**settings), "docs")
    yield server
    server.stop()
    hub.close()


ANSWERS = {  # the answer models by name, as /openapi.json names them
    name: model
    for module in (query_models, kb_models, openai_models)
    for name, model in vars(module).items()
    if isinstance(model, type) and issubclass(model, Answer)
} | {"CollectionList": CollectionList, "Ready": Ready}


@pytest.mark.parametrize(("method", "route", "path", "body"), CALLS)
def test_main_routes_answer_what_openapi_documents(live, method, route, path, body) -> None:
    documented = httpx.get(live.url + "/openapi.json").json()["paths"][route][method.lower()]
    content = documented["responses"]["200"]["content"]["application/json"]
    model = ANSWERS[content["schema"]["$ref"].rsplit("/", 1)[1]]
    answer = httpx.request(method, live.url + path, json=body, timeout=60)
    assert answer.status_code == 200, answer.text
    got = answer.json()
    assert model.model_validate(got).model_dump(mode="json", exclude_unset=True) == got


ERROR_CALLS = [  # (method, route in the schema, path, body, status)
    ("POST", "/query/{collection}", "/query/nope", {"query": REFUND}, 404),
    ("POST", "/query/{collection}", "/query/docs", {}, 422),
    ("POST", "/v1/rag/search", "/v1/rag/search", {"query": ""}, 422),
    ("POST", "/v1/chat/completions", "/v1/chat/completions", {"model": "docs"}, 400),
    ("GET", "/v1/models/{model}", "/v1/models/nope", None, 404),
]
ERROR_MODELS = {"ErrorBody": ErrorBody, "OpenAIErrorBody": OpenAIErrorBody}


@pytest.mark.parametrize(("method", "route", "path", "body", "status"), ERROR_CALLS)
def test_errors_answer_the_documented_shape(live, method, route, path, body, status) -> None:
    documented = httpx.get(live.url + "/openapi.json").json()["paths"][route][method.lower()]
    content = documented["responses"]["4XX"]["content"]["application/json"]
    model = ERROR_MODELS[content["schema"]["$ref"].rsplit("/", 1)[1]]
    answer = httpx.request(method, live.url + path, json=body)
    assert answer.status_code == status, answer.text
    got = answer.json()
    assert model.model_validate(got).model_dump(mode="json", exclude_unset=True) == got


def test_answers_that_are_not_json_document_their_type(live) -> None:
    """A kb file's download answers the file's own type and a migration streams NDJSON: the schema
    says so (it said application/json for both), and their errors stay in the one JSON shape."""
    paths = httpx.get(live.url + "/openapi.json").json()["paths"]
    name = next(iter(KB))
    download = httpx.get(f"{live.url}/v1/collections/docs/files/{name}")
    assert download.status_code == 200 and download.text == KB[name]
    assert download.headers["content-type"].startswith("text/markdown")  # not JSON
    files = paths["/v1/collections/{collection}/files/{path}"]["get"]["responses"]
    assert list(files["200"]["content"]) == ["*/*"]  # any type: the file's own
    migrate = paths["/v1/ops/migrate"]["post"]["responses"]
    assert list(migrate["200"]["content"]) == [Events.media_type] == ["application/x-ndjson"]
    for refusals in (files, migrate):
        assert list(refusals["4XX"]["content"]) == ["application/json"]


def test_the_bearer_scheme_is_declared_and_every_keyed_route_references_it(live) -> None:
    """/docs has an Authorize button: the scheme is declared, each route that takes a key names it
    (the public ones do not), and the refusals keep their bodies (tests/access)."""
    schema = httpx.get(live.url + "/openapi.json").json()
    assert schema["components"]["securitySchemes"]["bearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": schema["components"]["securitySchemes"]["bearer"]["description"],
    }
    operations = {
        (method.upper(), path): operation
        for path, item in schema["paths"].items()
        for method, operation in item.items()
    }
    public = {("GET", "/health")}  # /ready takes a key too: with one it says more
    for key, operation in operations.items():
        expected = [] if key in public else [{"bearer": []}]
        assert operation.get("security", []) == expected, key
    for key in [("POST", "/v1/chat/completions"), ("POST", "/query/{collection}")]:
        assert operations[key]["security"] == [{"bearer": []}]


def test_the_documented_version_is_the_installed_package_s(live) -> None:
    info = httpx.get(live.url + "/openapi.json").json()["info"]
    assert info["version"] == metadata.version("rag-hub") != "0+unknown"
