"""The console: server-rendered pages at `/` over the hub's own HTTP API, holding no collection
data (docs/console-and-uploads.md). Imports nothing of ours."""

from urllib.parse import quote, urlencode

COLLECTION_PAGE = "/console/collections/{name}"


def chunk_page(collection: str, source: str, chunk_index: int) -> str:
    """The path of the console's view of a document (`source`) in `collection`, opened at its
    chunk `chunk_index` (the `#n` of the chunk's id `collection:source#n`, everywhere the same)."""
    path = COLLECTION_PAGE.format(name=quote(collection, safe=""))
    return f"{path}?{urlencode({'source': source})}#chunk-{chunk_index}"
