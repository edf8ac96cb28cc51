"""Migration progress on stderr: one tqdm bar per phase (copy, catch-up 1, ...)."""

from __future__ import annotations

import sys

from tqdm import tqdm


class Bars:
    """Called with (phase, done, total) by a migration here or by the server's event stream."""

    def __init__(self) -> None:
        self.phase: str | None = None
        self.bar: tqdm | None = None

    def __call__(self, phase: str, done: int, total: int) -> None:
        if phase != self.phase:
            self.close()
            self.phase = phase
            self.bar = tqdm(total=total, desc=phase, unit="chunk", file=sys.stderr)
        assert self.bar is not None
        self.bar.total = max(total, done)
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self) -> Bars:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
