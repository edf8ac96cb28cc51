"""How much a migration changes answers: top-5 overlap of old and new for sampled chunk texts."""

from __future__ import annotations

import random

from rag_api.store import SearchSpec, Store

SAMPLE = 20
TOP = 5


def top5_overlap(
    store: Store, old: str | None, new: str | None, sample: int = SAMPLE
) -> float | None:
    """Mean share of the top-5 neighbours two collections agree on, with each sampled chunk's own
    stored vector (its text embedded by that collection's model) as the query; None when empty."""
    if old is None or new is None:
        return None
    candidates, _ = store.scroll(new, limit=max(sample * 8, 64), fields=["source"])
    ids = [r.id for r in random.sample(candidates, min(sample, len(candidates)))]
    before = {r.id: r.dense for r in store.retrieve(old, ids, with_dense=True)}
    after = {r.id: r.dense for r in store.retrieve(new, ids, with_dense=True)}
    old_info, new_info = store.physical_info(old), store.physical_info(new)
    shares = []
    for pid in ids:
        if before.get(pid) is None or after.get(pid) is None:
            continue
        a = {h.id for h in store.search(old, SearchSpec(TOP, dense=before[pid]), old_info)}
        b = {h.id for h in store.search(new, SearchSpec(TOP, dense=after[pid]), new_info)}
        shares.append(len(a & b) / max(min(len(a), len(b)), 1))
    return round(sum(shares) / len(shares), 3) if shares else None
