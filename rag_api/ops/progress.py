"""An operation's progress on stderr: one tqdm bar per phase (a migration's copy, catch-up 1, ...;
a sync's documents, its counts beside the bar)."""

from __future__ import annotations

import sys
from typing import Any

from tqdm import tqdm

UNITS = {"documents": "doc"}  # a phase's unit, when it is not chunks
SHOWN = ("indexed", "unchanged", "failed", "removed")  # a sync's counts beside its bar


class Bars:
    """Called with (phase, done, total, **detail) by an operation here, or with what the server
    says of it (its event stream, its job's progress); a total of 0 is not known yet."""

    def __init__(self) -> None:
        self.phase: str | None = None
        self.bar: tqdm | None = None

    def __call__(self, phase: str, done: int, total: int, **detail: Any) -> None:
        if phase != self.phase:
            self.close()
            self.phase = phase
            unit = UNITS.get(phase, "chunk")
            self.bar = tqdm(total=total or None, desc=phase, unit=unit, file=sys.stderr)
        assert self.bar is not None
        if total:
            self.bar.total = max(total, done)
        shown = {name: detail[name] for name in SHOWN if detail.get(name)}
        if shown:
            self.bar.set_postfix(shown, refresh=False)
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self) -> Bars:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
