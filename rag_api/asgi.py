"""The one module-level app, for `uvicorn rag_api.asgi:app`; settings from the RAG_* environment."""

from rag_api.http.app import create_app

app = create_app()
