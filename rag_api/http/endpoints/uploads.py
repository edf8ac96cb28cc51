"""Files over HTTP: upload into a collection's kb folder (its indexing job is followed at
/v1/jobs/{id}, rag_api.http.endpoints.jobs), list, delete, download (logic in rag_api.uploads).
Writes need RAG_ADMIN_API_KEY, reads the reader key.

The upload route reads its multipart body itself, after the key is checked: a client without the
admin key is refused before a byte of its files is parsed. Its body limit is
RAG_UPLOAD_MAX_BYTES (every other route keeps RAG_MAX_BODY_BYTES; see app.py).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Depends, Path, Request, Response
from fastapi.responses import FileResponse
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException

from rag_api.access.grant import audit
from rag_api.errors import InvalidRequest, PayloadTooLarge
from rag_api.http.any_path import ANY
from rag_api.http.auth import require_reader, require_writer
from rag_api.http.deps import UploadsDep, WatcherDep
from rag_api.jobs import models as job_models
from rag_api.schema import flag
from rag_api.uploads import models as upload_models
from rag_api.uploads.intake import Incoming

router = APIRouter(prefix="/v1", tags=["files"])
READ = [Depends(require_reader)]
WRITE = [Depends(require_writer)]
EXACT = {"response_model_exclude_unset": True}
UPLOAD_PATH = re.compile(r"^/v1/collections/[^/]+/files/?$")  # where the wider body limit applies
Result = dict[str, Any]
FilePath = Annotated[str, Path(description="the file's path inside the kb folder")]

UPLOAD_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["files"],
                    "properties": {
                        "files": {
                            "type": "array",
                            "items": {"type": "string", "format": "binary"},
                            "description": "one or more files of a type the readers support",
                        },
                        "folder": {
                            "type": "string",
                            "description": "sub-folder of the kb folder to put them in",
                        },
                        "overwrite": {
                            "type": "boolean",
                            "default": False,
                            "description": "replace existing files (else 409 FILE_EXISTS)",
                        },
                    },
                }
            }
        },
    }
}


@router.post(
    "/collections/{collection}/files",
    dependencies=WRITE,
    status_code=202,
    response_model=job_models.JobAnswer,
    openapi_extra=UPLOAD_BODY,
    **EXACT,
)
async def upload(
    collection: str, request: Request, response: Response, uploads: UploadsDep
) -> Result:
    """Write the files into the kb folder and queue their indexing: 202 with the job (and its
    URL in `Location`); 409 FILE_EXISTS, 413, 415, 422 for bad names, 429 when the queue is full."""
    settings = uploads.hub.settings
    try:
        form = await request.form(max_files=settings.upload_max_files, max_fields=16)
    except StarletteHTTPException as exc:  # starlette's multipart limits and parse errors
        if exc.status_code != 400:
            raise  # the body limit (413), cut while the form streamed in
        if "Too many files" in str(exc.detail):
            raise PayloadTooLarge(
                f"more than {settings.upload_max_files} files in one request (RAG_UPLOAD_MAX_FILES)"
            ) from None
        raise InvalidRequest(f"body: not a valid multipart form ({exc.detail})") from None
    try:
        files = [_incoming(item) for item in form.getlist("files")]
        folder = _text(form.get("folder"), "folder")
        overwrite = _flag(_text(form.get("overwrite"), "overwrite"), "overwrite")
        job = await anyio.to_thread.run_sync(uploads.accept, collection, files, folder, overwrite)
    finally:
        await form.close()  # the spooled temp files of the parts
    response.headers["Location"] = f"/v1/jobs/{job['id']}"
    audit("upload", collection, job=job["id"], files=[f["path"] for f in job["files"]])
    return job


def _incoming(item: UploadFile | str) -> Incoming:
    if not isinstance(item, UploadFile):
        raise InvalidRequest("files: every item must be a file (multipart with a filename)")
    size = item.size
    if size is None:
        size = item.file.seek(0, 2)
    return Incoming(item.filename, item.file, size)


def _text(value: UploadFile | str | None, field: str) -> str | None:
    if isinstance(value, UploadFile):
        raise InvalidRequest(f"{field}: must be a text field, not a file", param=field)
    return value


def _flag(value: str | None, field: str) -> bool:
    """An absent flag is false; a given one follows every body's rule (rag_api.schema)."""
    try:
        return value is not None and flag(value)
    except ValueError as exc:
        raise InvalidRequest(f"{field}: {exc}", param=field) from None


@router.get(
    "/collections/{collection}/files",
    dependencies=READ,
    response_model=upload_models.KbFileList,
    **EXACT,
)
def list_files(collection: str, uploads: UploadsDep, watcher: WatcherDep) -> Result:
    """The kb folder's files with their index state: indexed, stale, pending or failed."""
    bad: dict[str, str] = {}
    if watcher is not None:
        state = watcher.status()["collections"].get(collection)
        bad = state["bad_files"] if state else {}
    return uploads.files(collection, bad)


@router.get(
    f"/collections/{{collection}}/files/{{path:{ANY}}}",
    dependencies=READ,
    response_class=FileResponse,
    responses={200: {"content": {"*/*": {}}, "description": "The file, typed by its name"}},
)
def download(collection: str, path: FilePath, uploads: UploadsDep) -> FileResponse:
    """The original file, as uploaded or copied into the kb folder."""
    found = uploads.original(collection, path)
    return FileResponse(found, filename=found.name)


@router.delete(
    f"/collections/{{collection}}/files/{{path:{ANY}}}",
    dependencies=WRITE,
    response_model=upload_models.Deleted,
    **EXACT,
)
def delete_file(collection: str, path: FilePath, uploads: UploadsDep) -> Result:
    """Remove the file from the kb folder and its chunks from the collection."""
    deleted = uploads.delete(collection, path)
    audit("delete file", collection, path=path, chunks_removed=deleted["chunks_removed"])
    return deleted
