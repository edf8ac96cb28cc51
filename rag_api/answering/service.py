"""The query surface as calls (`hub.query`): POST /query/{collection} and `rag-hub query` for
any caller, answered with the declared `QueryAnswer` or as a stream of events."""

from __future__ import annotations

from rag_api.answering.models import QueryAnswer, QueryBody
from rag_api.answering.query import run_query
from rag_api.answering.stream import QueryEvents
from rag_api.catalog import Catalog


class Queries:
    def __init__(self, hub: Catalog) -> None:
        self.hub = hub

    def ask(self, collection: str, body: QueryBody) -> QueryAnswer:
        """Retrieve from the collection (or where `auto` routes), then answer."""
        return run_query(self.hub, collection, body)

    def events(self, collection: str, body: QueryBody) -> QueryEvents:
        """The same, as server-sent events: retrieval done and the answer started."""
        return QueryEvents(self.hub, collection, body)
