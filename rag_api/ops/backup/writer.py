"""A collection file written in a child process, so a backup taken inside the server leaves the
interpreter to the server's requests. The child runs RAG_BATCH_NICE levels down in the idle
scheduling class and reads either a copy of the embedded shard, taken under the hold by the
kernel (the server then does no work at all), or, from a Qdrant server, the points the server
read under the hold, pickled through a pipe; it encodes, compresses and hashes them.

    python -m rag_api.ops.backup.writer PATH [SHARD]    header (and pages) in on stdin,
                                                        the manifest entry out as JSON
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from rag_api.embedding.batch_threads import MAX_NICE
from rag_api.errors import RagError
from rag_api.ops.backup import file_format as fmt
from rag_api.store import PointData

PAGE = 512  # points a page from a shard copy


def write_aside(
    path: Path,
    header: fmt.Header,
    pages: Iterable[Sequence[PointData]],
    nice: int,
    shard: Path | None = None,
) -> dict[str, Any]:
    """Write a collection file through a child process, from `pages` or (set) the shard copy
    `shard`; its manifest entry (sha256, bytes, points). A failure in the child is raised here:
    OSError with its errno (a full disk stays a full disk), else RagError; the child removes its
    partial file either way."""
    command = [sys.executable, "-m", __name__, str(path)]
    child = subprocess.Popen(
        command + ([str(shard)] if shard is not None else []),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    _lower(child.pid, nice)
    try:
        pickle.dump(header, child.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        for page in pages:  # none with a shard copy
            pickle.dump(list(page), child.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        pickle.dump(None, child.stdin)
        child.stdin.close()
    except BrokenPipeError:
        pass  # the child stopped early: its report says why
    except BaseException:
        child.kill()  # without its end mark the child removes its partial file
        child.wait()
        raise
    report, errors = child.stdout.read(), child.stderr.read()
    child.wait()
    try:
        answer = json.loads(report)
    except ValueError:
        tail = errors.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        raise RagError(
            f"writing {path} failed: the writer exited {child.returncode} ({tail[0]})"
        ) from None
    if "error" in answer:
        if answer.get("errno"):
            raise OSError(answer["errno"], answer["error"], str(path))
        raise RagError(f"writing {path} failed: {answer['error']}")
    return answer


def _piped(source: IO[bytes]) -> Iterator[list[PointData]]:
    while (page := pickle.load(source)) is not None:
        yield page


def _lower(pid: int, nice: int) -> None:
    """Process `pid` `nice` levels down, and on Linux into the idle scheduling class: it then runs
    only on CPU time no request, batch or other process wants, and yields it at once when one
    does. Set by the server as soon as the child exists, before its imports take their second."""
    try:
        current = os.getpriority(os.PRIO_PROCESS, pid)
        os.setpriority(os.PRIO_PROCESS, pid, min(MAX_NICE, current + max(nice, 0)))
        if hasattr(os, "SCHED_IDLE"):
            os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))
    except OSError:
        pass


def main(argv: list[str]) -> int:
    path = Path(argv[0])
    shard = Path(argv[1]) if len(argv) > 1 else None
    source = sys.stdin.buffer
    store = None
    try:
        header: fmt.Header = pickle.load(source)
        pages: Iterable[Sequence[PointData]] = _piped(source)
        if shard is not None:
            from rag_api.store.edge import EdgeStore

            store = EdgeStore(shard.parent)
            header = replace(header, points=store.count(shard.name))  # exact, for the header
            pages = store.export(shard.name, PAGE)
        answer: dict[str, Any] = fmt.write_points(path, header, pages)
    except BaseException as exc:  # EOFError: the server went away before the end mark
        answer = {"error": f"{type(exc).__name__}: {exc}"}
        if isinstance(exc, OSError) and exc.errno:
            answer = {"error": exc.strerror or str(exc), "errno": exc.errno}
    finally:
        if store is not None:
            store.close()
    sys.stdout.write(json.dumps(answer))
    return 0 if "error" not in answer else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
