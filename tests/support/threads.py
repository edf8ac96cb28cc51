"""What another thread of this process is doing now, read from its Python frames and the kernel:
tests wait on these conditions instead of sleeping and hoping the thread got there."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from types import FrameType


def frames(thread: threading.Thread) -> list[FrameType]:
    """The thread's Python frames, innermost first ([] once it has ended)."""
    frame = sys._current_frames().get(thread.ident) if thread.ident is not None else None
    stack = []
    while frame is not None:
        stack.append(frame)
        frame = frame.f_back
    return stack


def asleep(thread: threading.Thread) -> bool:
    """The kernel has the thread asleep (blocked in a wait), not running or runnable."""
    try:
        stat = Path(f"/proc/self/task/{thread.native_id}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] in ("S", "D")


def waiting_on_condition_in(thread: threading.Thread, function: str, module: str) -> bool:
    """The thread waits on a threading.Condition from `function` of a file ending in `module`
    (e.g. a ReadWriteLock's `read`, held by another thread), and the kernel has it asleep."""
    stack = frames(thread)
    if len(stack) < 2 or stack[0].f_code.co_name != "wait":
        return False
    caller = stack[1].f_code
    return caller.co_name == function and caller.co_filename.endswith(module) and asleep(thread)


def blocked_at(thread: threading.Thread, function: str, line: int) -> bool:
    """The thread's innermost Python frame is `function` at `line` (where it acquires a lock:
    an acquire has no Python frame of its own), and the kernel has it asleep."""
    stack = frames(thread)
    if not stack:
        return False
    code = stack[0].f_code
    return code.co_name == function and stack[0].f_lineno == line and asleep(thread)
