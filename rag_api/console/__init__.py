"""The console: server-rendered pages at `/` over the hub's own HTTP API, holding no collection
data (docs/console-and-uploads.md). Imports nothing of ours."""

from urllib.parse import quote, urlencode

COLLECTION_PAGE = "/console/collections/{name}"


def chunk_page(collection: str, source: str, seq: int | None) -> str:
    """The path of the console's view of a document (`source`) in `collection`, opened at the chunk
    numbered `seq` (its `index` in the admin API) when it has one."""
    path = COLLECTION_PAGE.format(name=quote(collection, safe=""))
    return f"{path}?{urlencode({'source': source})}" + (f"#chunk-{seq}" if seq is not None else "")
