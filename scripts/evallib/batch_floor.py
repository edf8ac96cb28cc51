"""The floor of query batching on this machine (bench_voice): what a question's embedding costs
alone and in one call with others, and what a callers' turn would cost at batching's best."""

from __future__ import annotations

import argparse
import os
import time

from rag_api.hub import Hub
from rag_api.settings import Settings
from scripts.evallib.baseline import ratios

BATCHES = (1, 4, 8)  # questions embedded in one call


def batch_costs(settings: Settings, queries: list[str]) -> dict[str, dict[int, float]]:
    """CPU seconds a question of `docs`' model costs embedded alone (1) and in one call with 3 or
    7 others (4, 8), on the query session as the server embeds them: for `queries` (their lengths
    differ, and a call pads every question to its longest) and for the first of them repeated
    (no padding: batching's best case)."""
    hub = Hub.open(settings)
    try:
        embedder = hub.embedders.get(hub.collection("docs").cfg.embedder)
        embedder.embed_queries(queries[:8])  # warm-up
        costs = {}
        for label, texts in (("questions", queries), ("one repeated", [queries[0]] * len(queries))):
            spent = dict.fromkeys(BATCHES, 0.0)
            for start in range(0, len(texts) - 7, 8):  # the sizes in turns, 8 questions each
                for size in BATCHES:
                    started = time.process_time()
                    for part in range(start, start + 8, size):
                        embedder.embed_queries(texts[part : part + size])
                    spent[size] += time.process_time() - started
            costs[label] = {size: cpu / (len(texts) // 8 * 8) for size, cpu in spent.items()}
        return costs
    finally:
        hub.close()


def floor(
    args: argparse.Namespace,
    asked_phase: str,
    kept_phase: str,
    results: dict[str, dict[str, dict[str, list[float]]]],
    costs: dict[str, dict[int, float]],
) -> None:
    """How far query batching can take the callers' turns here: the turns without an embedding
    (vectors kept), and a turn's server CPU with every question embedded at the cheapest CPU a
    question batch_costs found (its best case)."""
    for label, cost in costs.items():
        shares = ", ".join(f"{b} {c * 1000:.2f} ms ({c / cost[1]:.2f}x)" for b, c in cost.items())
        print(f"a question's embedding, CPU, by questions in one call ({label}): {shares}")
    base, runs = next(iter(results.items()))
    kept, asked = runs[kept_phase], runs[asked_phase]
    print(
        f"the floor of any query batching, {args.callers} callers whose vectors are kept vs "
        f"{args.callers} callers on {base}: {ratios(kept['total'], asked['total'])}"
    )
    busy = sum(asked["cpu"]) / (args.seconds / 2 * args.rounds) / (os.cpu_count() or 1)
    best = min(c / cost[1] for cost in costs.values() for c in cost.values())
    embedding = cpu_per_turn(asked) - cpu_per_turn(kept)
    batched = cpu_per_turn(kept) + embedding * best
    print(
        f"server CPU a turn: {cpu_per_turn(asked):.1f} ms on {base} ({embedding:.1f} of it the "
        f"embedding; the server kept {busy:.0%} of the cores busy), "
        f"{cpu_per_turn(kept):.1f} with vectors kept; every question at batching's "
        f"best ({best:.2f}x its CPU alone): ≥ {batched:.1f} ms ({batched / cpu_per_turn(asked):.2f}x)"
    )


def cpu_per_turn(record: dict[str, list[float]]) -> float:
    """The server's CPU milliseconds a request in a phase (with_cpu's)."""
    return sum(record["cpu"]) / len(record["total"]) * 1000
