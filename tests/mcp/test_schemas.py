"""What the MCP tools publish of search's filters (rag_api.mcp.schemas.SearchFilters): each filter
the hub knows is described in the words agents read, metadata keys carry the hub's own pattern,
and the schema is /query's Filters' otherwise."""

from __future__ import annotations

from rag_api.answering.models import Filters
from rag_api.config import METADATA_KEY
from rag_api.mcp.schemas import FILTER_FIELDS, SearchFilters, _described


def test_each_filter_is_described_and_metadata_keys_follow_the_hubs_pattern() -> None:
    schema = SearchFilters.model_json_schema()
    properties = schema["properties"]
    assert set(properties) == set(FILTER_FIELDS)
    for name, description in FILTER_FIELDS.items():
        assert properties[name]["description"] == description
    assert properties["metadata"]["propertyNames"] == {"pattern": METADATA_KEY.pattern}


def test_the_schema_is_the_hubs_filters_but_for_the_descriptions() -> None:
    mine, hubs = SearchFilters.model_json_schema(), Filters.model_json_schema()
    for name, prop in mine["properties"].items():
        stripped = {k: v for k, v in prop.items() if k not in {"description", "propertyNames"}}
        theirs = {k: v for k, v in hubs["properties"][name].items() if k != "description"}
        assert stripped == {k: v for k, v in theirs.items() if k != "propertyNames"}, name


def test_a_schema_without_those_properties_is_left_as_it_is() -> None:
    bare: dict = {"type": "object"}
    _described(bare)
    assert bare == {"type": "object"}
    other = {"properties": {"colour": {"type": "string", "description": "a colour"}}}
    _described(other)
    assert other == {"properties": {"colour": {"type": "string", "description": "a colour"}}}
