"""Prometheus metrics (prometheus_client): what the hub counts while serving, and what it reads
from the store and the indexer when /metrics is scraped.

Labels are bounded: route templates (not paths), status classes, configured collections and
provider names. The hub serves from one process (`rag-hub serve` runs one uvicorn worker: the
embedded store allows one owner), so the default in-process registry is the whole truth.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from typing import Any

from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

HTTP_REQUESTS = Counter(
    "rag_http_requests",
    "HTTP requests answered, by route template, method and status class.",
    ["route", "method", "status"],
)
HTTP_LATENCY = Histogram(
    "rag_http_request_duration_seconds",
    "Time to answer an HTTP request (to its last body byte), by route template and collection.",
    ["route", "collection"],
    buckets=LATENCY_BUCKETS,
)
RETRIEVAL_STAGE = Histogram(
    "rag_retrieval_stage_duration_seconds",
    "Time of one stage of answering a query: embed, store (search), rerank, generate.",
    ["stage", "collection"],
    buckets=LATENCY_BUCKETS,
)
EMBEDDINGS = Counter(
    "rag_embeddings",
    "Texts embedded: kind=query (a search) or document (indexing), by embedder provider.",
    ["provider", "kind"],
)
EMBEDDING_LATENCY = Histogram(
    "rag_embedding_duration_seconds",
    "Time of one embedding call (a query, or a batch of chunks), by provider and kind.",
    ["provider", "kind"],
    buckets=LATENCY_BUCKETS,
)
EMBEDDING_RETRIES = Counter(
    "rag_embedding_retries",
    "Requests to an embedding server tried again, by provider and why (429, 503, reset, timeout...).",
    ["provider", "reason"],
)
EMBEDDING_INFLIGHT = Gauge(
    "rag_embedding_inflight",
    "Requests in flight to an embedding server now, by provider and model.",
    ["provider", "model"],
)
QUERY_BATCH = Histogram(
    "rag_query_batch_size",
    "Questions embedded in one call: those that arrived while the model was busy go together.",
    buckets=(1, 2, 3, 4, 6, 8, 12, 16, 32),
)
LLM_CALLS = Counter("rag_llm_calls", "Answers asked of an LLM, by provider.", ["provider"])
LLM_FAILURES = Counter(
    "rag_llm_failures",
    "LLM calls that failed (unreachable, error, timeout; before or during the answer).",
    ["provider"],
)
LLM_FALLBACKS = Counter(
    "rag_llm_fallbacks",
    "Answers given extractively because the collection's LLM failed before answering.",
    ["collection"],
)
NO_EVIDENCE = Counter(
    "rag_no_evidence_answers",
    "Questions answered with the fixed no-evidence answer (no passage passed the thresholds).",
    ["collection"],
)
# seconds per stage name in SearchOutcome.timings_ms / the query response
_STAGES = {"embed": "embed", "search": "store", "rerank": "rerank", "generate": "generate"}


def observe_stages(collection: str, timings_ms: Mapping[str, float]) -> None:
    """Record the retrieval stages a query went through (its `timings_ms`)."""
    for key, stage in _STAGES.items():
        if key in timings_ms:
            RETRIEVAL_STAGE.labels(stage, collection).observe(timings_ms[key] / 1000)


class HubCollector(Collector):
    """Read at scrape time: points per collection, and the folder indexer's state."""

    def __init__(
        self,
        points: Mapping[str, int],
        circuits: Mapping[str, str],
        indexer: Mapping[str, Any],
    ) -> None:
        self.points = points  # collection -> points stored (unreadable ones left out)
        self.circuits = circuits  # collection -> its LLM server's circuit state
        self.indexer = indexer  # the watcher's status (`running: false` when there is none)

    def collect(self) -> Iterator[Any]:
        yield from self._store()
        yield from self._circuits()
        yield from self._indexer()

    def _circuits(self) -> Iterator[Any]:
        circuit = GaugeMetricFamily(
            "rag_llm_circuit_state",
            "1 for the state (closed, open, half-open) of the circuit breaker of each collection's "
            "LLM server; while open, answers are extractive at once.",
            labels=["collection", "state"],
        )
        for name, now in self.circuits.items():
            for state in ("closed", "open", "half-open"):
                circuit.add_metric([name, state], int(state == now))
        yield circuit

    def _store(self) -> Iterator[Any]:
        points = GaugeMetricFamily(
            "rag_store_points", "Points (chunks) stored per collection.", labels=["collection"]
        )
        for name, count in self.points.items():
            points.add_metric([name], count)
        yield points

    def _indexer(self) -> Iterator[Any]:
        status = self.indexer
        rows: dict[str, dict[str, Any]] = status["collections"]
        yield GaugeMetricFamily(
            "rag_indexer_up",
            "1 when the folder indexer runs in this process.",
            value=int(bool(status["running"])),
        )
        gauges = {
            "files": "Files of the kb folder indexed, per collection.",
            "queue": "Changed files waiting to be indexed, per collection.",
        }
        for gauge, text in gauges.items():
            family = GaugeMetricFamily(f"rag_indexer_{gauge}", text, labels=["collection"])
            for name, row in rows.items():
                family.add_metric([name], row[gauge])
            yield family
        last = GaugeMetricFamily(
            "rag_indexer_last_reconcile_timestamp_seconds",
            "Unix time the last full reconcile of the kb folder finished.",
            labels=["collection"],
        )
        for name, row in rows.items():
            if row["last_reconcile"]:
                last.add_metric([name], datetime.fromisoformat(row["last_reconcile"]).timestamp())
        yield last
        for counter in sorted({c for row in rows.values() for c in row["counters"]}):
            family = CounterMetricFamily(
                f"rag_indexer_{counter}",
                f"Indexer {counter.replace('_', ' ')} since start, per collection.",
                labels=["collection"],
            )
            for name, row in rows.items():
                family.add_metric([name], row["counters"].get(counter, 0))
            yield family


def exposition(
    points: Mapping[str, int],
    circuits: Mapping[str, str],
    indexer: Mapping[str, Any],
    shown: Callable[[str], bool] | None = None,
) -> bytes:
    """The text Prometheus scrapes: the process-wide metrics (with process_* and python_*), then
    the hub's readings (HubCollector); with `shown`, only the series of the collections it
    accepts (and those of no collection)."""
    scraped = CollectorRegistry(auto_describe=False)
    scraped.register(HubCollector(points, circuits, indexer))
    if shown is None:
        return generate_latest(REGISTRY) + generate_latest(scraped)
    return generate_latest(_Shown(REGISTRY, shown)) + generate_latest(_Shown(scraped, shown))


class _Shown:
    """A registry's metrics without the series of the collections `shown` refuses."""

    def __init__(self, registry: CollectorRegistry, shown: Callable[[str], bool]) -> None:
        self.registry = registry
        self.shown = shown

    def collect(self) -> Iterator[Metric]:
        for family in self.registry.collect():  # fresh objects each scrape: ours to change
            family.samples = [
                s
                for s in family.samples
                if "collection" not in s.labels or self.shown(s.labels["collection"])
            ]
            yield family
