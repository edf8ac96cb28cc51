"""The console's routes: the page shells and their static files (see rag_api.console)."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from rag_api.console import COLLECTION_PAGE

HERE = Path(__file__).parent
STATIC = "/console/static"
FAVICON = "/favicon.ico"  # where browsers look first; the console's pages and /docs link it too
templates = Jinja2Templates(directory=HERE / "templates")
router = APIRouter(include_in_schema=False)  # pages, not API: they stay out of /openapi.json


def page(
    request: Request, template: str, title: str, status: int = 200, **context: object
) -> HTMLResponse:
    """A page of the console's look: `template` with `context` (plain values only)."""
    context = {"title": title, "static": STATIC, "favicon": FAVICON, **context}
    response = templates.TemplateResponse(request, template, context, status_code=status)
    response.headers["Cache-Control"] = "no-store"
    return response


@router.get("/", response_class=HTMLResponse)
def overview(request: Request) -> HTMLResponse:
    """Collections at a glance."""
    return page(request, "overview.html", "Collections")


@router.get(COLLECTION_PAGE, response_class=HTMLResponse)
def collection(request: Request, name: str) -> HTMLResponse:
    """One collection: files, upload, chunks (`?source=` opens a document's chunks, `#chunk-N`
    marks its chunk N: where a passage page links). The name is only echoed (escaped); the data
    comes from the API, which says whether it exists."""
    return page(request, "collection.html", name, collection=name)


@router.get("/console/ask", response_class=HTMLResponse)
def ask(request: Request) -> HTMLResponse:
    """A question, its streamed answer, and why each source was chosen."""
    return page(request, "ask.html", "Ask")


@router.get("/console/jobs", response_class=HTMLResponse)
def jobs(request: Request) -> HTMLResponse:
    """Uploads, backups, checks and migrations: every job the tab's key may see."""
    return page(request, "jobs.html", "Jobs")


@router.get("/console/keys", response_class=HTMLResponse)
def keys(request: Request) -> HTMLResponse:
    """Enter the key this tab uses."""
    return page(request, "keys.html", "Keys")


@router.get(FAVICON)
def favicon() -> FileResponse:
    """The hub's icon (SVG: one small file for every size)."""
    return FileResponse(HERE / "static" / "favicon.svg", media_type="image/svg+xml")


def install(app: FastAPI) -> None:
    """Add the pages and their static files to `app`."""
    app.include_router(router)
    app.mount(STATIC, StaticFiles(directory=HERE / "static"), name="console-static")
