"""The HTTP surface: the FastAPI app, its endpoints, auth, limits, JSON bodies, the hot reads, the
error shapes and the request log; may import every package but cli; only asgi and cli import it."""
