"""What a collection's passages typically look like: a fixed sample of its stored vectors, against
which `auto` measures how far a question's best passage stands out (rag_api.routing.probe)."""

from __future__ import annotations

import threading

import numpy as np

from rag_api.payload import SOURCE
from rag_api.points.collection import EVERYTHING, Collection

SAMPLE = 256  # stored vectors that stand for a collection's typical passage
RESAMPLE_DRIFT = 0.25  # renew the sample when the point count moved by this share


class TypicalPassages:
    """A fixed sample of each collection's stored vectors, read once and renewed as it grows."""

    def __init__(self) -> None:
        # name -> (physical, points, the writer's published version on a reader, sample)
        self._samples: dict[str, tuple[str, int, object, np.ndarray]] = {}
        self._lock = threading.Lock()

    def of(self, collection: Collection) -> np.ndarray | None:
        info = collection.info()
        if info is None:
            return None
        kept = self._samples.get(collection.name)
        same = kept is not None and kept[0] == info.physical and kept[2] == collection.published
        if kept is not None and same and _close(kept[1], info.points):
            return kept[3]
        records = collection.records(EVERYTHING, [SOURCE], limit=SAMPLE, dense=True)
        rows = [r.dense for r in records if r.dense]
        sample = np.asarray(rows, dtype=np.float32) if rows else np.zeros((0, 0), np.float32)
        with self._lock:
            self._samples[collection.name] = (
                info.physical,
                info.points,
                collection.published,
                sample,
            )
        return sample


def _close(then: int, now: int) -> bool:
    return abs(now - then) <= RESAMPLE_DRIFT * max(then, 1)
