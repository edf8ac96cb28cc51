"""The read-only commands, `query` and `collections`: through the running server when it owns the
store (with the reader key), else on the store itself."""

from __future__ import annotations

import json
import logging

import click

from rag_api.cli.common import domain_errors
from rag_api.cli.ops import store_owner
from rag_api.settings import Settings


@click.command()
@click.argument("collection")
@click.argument("question")
@click.option("--top-k", type=click.IntRange(1, 100))
@click.option("--threshold", type=click.FloatRange(-1, 1))
@click.option("--mode", type=click.Choice(["dense", "sparse", "hybrid"]))
@click.option("--source", "sources", multiple=True, help="Only these sources (repeatable).")
@click.option("--source-prefix", help="Only sources starting with this.")
@click.option(
    "--filter",
    "filters",
    multiple=True,
    metavar="KEY=VALUE",
    help="Metadata equality (repeatable).",
)
@click.option(
    "--types",
    metavar="TYPE[,TYPE...]",
    help="Only chunks of these types, e.g. prose,table,boilerplate "
    "(default: the collection's retrieval.types; docs/labels.md).",
)
@click.option(
    "--min-quality",
    type=click.FloatRange(0, 1),
    help="Leave out chunks labelled below this quality (default: retrieval.min_quality).",
)
@click.option(
    "--rerank/--no-rerank",
    default=None,
    help="Rerank with the collection's cross-encoder (default: its rerank block decides).",
)
@click.option("--diversity", type=click.FloatRange(0, 1), help="MMR: 0 = off, 1 = most diverse.")
@click.option("--no-generate", is_flag=True, help="Only retrieve; no answer.")
@click.option("--json", "as_json", is_flag=True, help="Print the full response as JSON.")
@click.pass_obj
@domain_errors
def query(
    settings: Settings,
    collection: str,
    question: str,
    top_k: int | None,
    threshold: float | None,
    mode: str | None,
    sources: tuple[str, ...],
    source_prefix: str | None,
    filters: tuple[str, ...],
    types: str | None,
    min_quality: float | None,
    rerank: bool | None,
    diversity: float | None,
    no_generate: bool,
    as_json: bool,
) -> None:
    """Ask COLLECTION a QUESTION."""
    from pydantic import ValidationError

    from rag_api.answering.models import QueryBody
    from rag_api.ops.interface import QUERY, OnCollection

    metadata = {}
    for item in filters:
        key, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--filter")
        metadata[key] = _scalar(value)
    try:
        body = QueryBody(
            query=question,
            top_k=top_k,
            threshold=threshold,
            mode=mode,
            sources=list(sources) or None,
            filters={
                "metadata": metadata,
                "source_prefix": source_prefix,
                "types": None if types is None else [t.strip() for t in types.split(",")],
                "min_quality": min_quality,
            },
            rerank=rerank,
            diversity=diversity,
            generate=not no_generate,
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"])
        raise click.BadParameter(f"{field}: {error['msg']}") from None
    # the response carries the LLM's warning: printed below, not logged as well
    logging.getLogger("rag_api.answering.answer").setLevel(logging.ERROR)
    # through the server when it owns the store, with the reader key
    with store_owner(settings, admin=False) as owner:
        answer = owner.run(QUERY, OnCollection(collection=collection, body=body))
    response = answer.model_dump(mode="json", exclude_unset=True)
    if as_json:
        click.echo(json.dumps(response, indent=2, ensure_ascii=False))
        return
    if response["answer"] is not None:
        click.echo(response["answer"])
        click.echo()
    if response.get("warning"):
        click.echo(f"warning: {response['warning']}", err=True)
    click.echo(f"mode: {response['mode']}")
    if routing := response.get("routing"):  # `auto`: where it looked and why
        searched = ", ".join(routing["searched"]) or "nothing found"
        click.echo(f"routing: {routing['decision']} ({routing['reason']}): {searched}")
    for n, source in enumerate(response["sources"], 1):
        name = (
            f"{source['collection']}:{source['source']}"
            if "collection" in source
            else source["source"]
        )
        click.echo(f"[{n}] {name}#{source['chunk_index']}  {_why(source)}")


@click.command("collections")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
@domain_errors
def collections_(settings: Settings, as_json: bool) -> None:
    """List the configured collections and what the store holds."""
    from rag_api.ops.interface import COLLECTIONS, Nothing

    # through the server when it owns the store, with the reader key
    with store_owner(settings, admin=False) as owner:
        listed = owner.run(COLLECTIONS, Nothing()).collections
    rows = [row.model_dump(mode="json", exclude_unset=True) for row in listed]
    if as_json:
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    for row in rows:
        state = "" if row["enabled"] else " (disabled)"
        state += f" ({row['error']['message']})" if "error" in row else ""
        click.echo(
            f"{row['name']}{state}: {row['points']} chunks, {row['embedder']} ({row['dim']}d, "
            f"{_placement(row)}), "
            f"{row['language']}, mode {row['mode']}, llm {row['llm']}{_reranker(row)}, "
            f"kb {row['kb']}"
        )


def _placement(row: dict) -> str:
    """Where a collection's embedder runs: 'cuda:0 fp16', 'cpu fp32', or a remote model's URL."""
    return f"{row.get('device', '?')} {row.get('precision') or ''}".strip()


def _reranker(row: dict) -> str:
    """', rerank MODEL (cpu fp32)' or ', rerank MODEL (server closed)'; nothing without one."""
    if not (rerank := row.get("rerank")):
        return ""
    where = _placement(rerank) if "device" in rerank else f"server {rerank['circuit']['state']}"
    return f", rerank {rerank['model']} ({where})"


def _why(source: dict) -> str:
    """Why a passage was returned: its fused score and each side's score and rank."""
    parts = [f"score={source['score']:.4f}"]
    for side in ("dense", "sparse"):
        if source[f"{side}_score"] is not None:
            rank = source[f"{side}_rank"]
            parts.append(f"{side}={source[f'{side}_score']:.4f} (#{rank or '-'})")
    if source["rerank_score"] is not None:
        parts.append(f"rerank={source['rerank_score']:.4f}")
    if "type" in source:  # labelled (docs/labels.md)
        quality = source["quality"]
        parts.append(source["type"] + ("" if quality is None else f" quality={quality:.2f}"))
    return "  ".join(parts)


def _scalar(value: str) -> str | int | float | bool:
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value
