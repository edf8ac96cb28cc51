"""The sources' state of a deployment of replicas (rag_api.sources.state): one document per source
in Qdrant's system collection, so that a writer that replaces another carries on where it
stopped (the last commit, a crawl's links, the pages that answered 404 once)."""

from __future__ import annotations

from dataclasses import asdict

from rag_api.sources.state import SourceState
from rag_api.store.system import SystemDocs

KIND = "source"


class SharedStates:
    def __init__(self, docs: SystemDocs) -> None:
        self.docs = docs

    def load(self, collection: str, source: str) -> SourceState:
        document = self.docs.get(KIND, f"{collection}/{source}")
        return SourceState.from_dict(document) if document is not None else SourceState()

    def save(self, collection: str, source: str, record: SourceState) -> None:
        self.docs.put(KIND, f"{collection}/{source}", asdict(record))
