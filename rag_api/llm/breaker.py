"""A circuit breaker per LLM upstream: after repeated failures, stop calling it for a cool-down.

closed: calls go through; `failures` consecutive failures open the circuit.
open: calls are refused at once (the caller answers extractively) until `cooldown` seconds pass.
half-open: one call goes through as a probe; its success closes the circuit, its failure opens it
again for another cool-down. Other calls are refused while the probe runs.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Literal

log = logging.getLogger("rag_api.llm.breaker")

State = Literal["closed", "open", "half-open"]


class CircuitBreaker:
    """Thread-safe: generations run in worker threads."""

    def __init__(
        self,
        name: str,
        failures: int,
        cooldown: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.threshold = failures
        self.cooldown = cooldown
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._probing = False

    @property
    def state(self) -> State:
        with self._lock:
            return self._state()

    def _state(self) -> State:
        if self._opened_at is None:
            return "closed"
        if self._probing or self._clock() - self._opened_at >= self.cooldown:
            return "half-open"
        return "open"

    def retry_in(self) -> float:
        """Seconds until the next probe is allowed (0 when calls go through)."""
        with self._lock:
            if self._opened_at is None:
                return 0.0
            return max(0.0, self.cooldown - (self._clock() - self._opened_at))

    def allow(self) -> bool:
        """Whether a call may go now; in half-open, True for the one probe only."""
        with self._lock:
            state = self._state()
            if state == "closed":
                return True
            if state == "open" or self._probing:
                return False
            self._probing = True
            log.info("LLM %s: cool-down over, probing", self.name)
            return True

    def succeeded(self) -> None:
        with self._lock:
            if self._opened_at is not None:
                log.warning("LLM %s answers again: circuit closed", self.name)
            self._failures, self._opened_at, self._probing = 0, None, False

    def failed(self) -> None:
        with self._lock:
            self._failures += 1
            if self._probing or (self._opened_at is None and self._failures >= self.threshold):
                log.warning(
                    "LLM %s failed %d times in a row: not called for %g s",
                    self.name,
                    self._failures,
                    self.cooldown,
                )
                self._opened_at = self._clock()
            self._probing = False

    def abandoned(self) -> None:
        """The call ended without a verdict (the client went away first): free the probe."""
        with self._lock:
            self._probing = False

    def describe(self) -> dict[str, Any]:
        """State, consecutive failures and seconds until the next probe, for status endpoints."""
        with self._lock:
            state = self._state()
            failures = self._failures
        return {"state": state, "failures": failures, "retry_in_s": round(self.retry_in(), 1)}
