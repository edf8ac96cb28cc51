"""The floor under the hub's HTTP/JSON share: a bare uvicorn app (the same server, loop and HTTP
parser as `rag-hub serve`) answering POSTs with JSON of a given size, after one hop to a worker
thread that does `work_ms` of CPU work without the GIL (as long as a search: the event loop thread
idles meanwhile, as the hub's does). Its body carries `timings_ms.total` (the worker's own time),
so a client subtracts it exactly as it does from a hub answer.

    python -m scripts.evallib.bare_server PORT SIZE_BYTES WORK_MS

or, from a benchmark, `with floor_server(port, size, work_ms) as url:` (a child process).
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import uvicorn

WORKER = ThreadPoolExecutor(4, thread_name_prefix="bare")
BLOCK = bytes(1 << 20)  # sha256 over it releases the GIL


def app_for(size: int, work_ms: float):
    """The ASGI app: every POST answers `size` bytes of JSON after `work_ms` in a worker."""
    head = '{"timings_ms":{"total":%9.3f},"pad":"'
    template = head + "x" * max(0, size - len(head % 0.0) - 2) + '"}'
    blocks = 0
    if work_ms > 0:  # how many blocks take work_ms on this CPU
        started = time.perf_counter()
        for _ in range(20):
            hashlib.sha256(BLOCK).digest()
        blocks = max(1, round(work_ms / ((time.perf_counter() - started) * 1000 / 20)))

    def work() -> bytes:
        started = time.perf_counter()
        for _ in range(blocks):
            hashlib.sha256(BLOCK).digest()
        return (template % ((time.perf_counter() - started) * 1000)).encode()

    async def app(scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        body = await asyncio.get_running_loop().run_in_executor(WORKER, work)
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


@contextmanager
def floor_server(port: int, size: int, work_ms: float) -> Iterator[str]:
    """This module's app in a child process on `port`, until the block ends; yields its URL."""
    from scripts.evallib.server import child_server  # here: the floor's own process loads no hub

    command = [
        sys.executable,
        "-m",
        "scripts.evallib.bare_server",
        str(port),
        str(size),
        str(work_ms),
    ]
    with child_server(command, port) as url:
        yield url


if __name__ == "__main__":
    port, size, work_ms = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    uvicorn.run(app_for(size, work_ms), port=port, log_level="warning", access_log=False)
