"""Load for the benchmarks that measure a server while something else runs."""

from __future__ import annotations

import threading
import time


def run_for(threads: list[threading.Thread], seconds: float, stop: threading.Event) -> None:
    """Start `threads`, let them run `seconds`, set `stop` and wait for them all."""
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
