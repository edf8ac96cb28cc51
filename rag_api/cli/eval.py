"""`rag-hub eval`: the table per mode and fusion, `--tune`'s best block as YAML, `--write`.

Runs in this process, or inside the server that owns the embedded store (over HTTP with the
reader key, as `rag-hub query` does). `--write` edits collections.yaml here, comments kept.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from rag_api.cli.common import domain_errors
from rag_api.settings import Settings

COLUMNS = (
    ("nDCG@10", "ndcg@10"),
    ("R@{k}", "recall@{k}"),
    ("MRR@10", "mrr@10"),
    ("hit@1", "hit@1"),
    ("no-answer", "no_answer"),
    ("wrong-src", "wrong_source"),
    ("p50 ms", "p50_ms"),
)


@click.command("eval")
@click.argument("collection")
@click.argument("questions", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--modes", help="Comma-separated modes to measure [default: dense,sparse,hybrid].")
@click.option("--k", type=click.IntRange(1, 100), default=10, show_default=True, help="recall@k.")
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
@click.option("--tune", is_flag=True, help="Search the settings that need no re-index.")
@click.option(
    "--compare-rerank",
    is_flag=True,
    help="Measure each row with and without the collection's reranker.",
)
@click.option(
    "--write", is_flag=True, help="With --tune: apply the best block to collections.yaml."
)
@click.option(
    "--generate",
    type=click.IntRange(1, 500),
    metavar="N",
    help="Draft N questions from the collection's chunks into QUESTIONS (a new file), then measure.",
)
@click.pass_obj
@domain_errors
def eval_command(
    settings: Settings,
    collection: str,
    questions: Path,
    modes: str | None,
    k: int,
    as_json: bool,
    tune: bool,
    compare_rerank: bool,
    write: bool,
    generate: int | None,
) -> None:
    """Measure COLLECTION's retrieval on the QUESTIONS file (JSONL or CSV; see docs/eval.md)."""
    if write and not tune:
        raise click.UsageError("--write applies what --tune finds: give both")
    fields: dict[str, Any] = {"k": k, "tune": tune, "compare_rerank": compare_rerank}
    document = _evaluate(settings, collection, questions, modes, fields, generate)
    click.echo(json.dumps(document, indent=2, ensure_ascii=False) if as_json else render(document))
    if write:
        _write(settings, collection, document["tune"])


def _evaluate(
    settings: Settings,
    collection: str,
    path: Path,
    modes: str | None,
    fields: dict[str, Any],
    generate: int | None,
) -> dict[str, Any]:
    from pydantic import ValidationError

    from rag_api.cli.ops import store_owner
    from rag_api.evaluation.questions import dump_questions, load_questions, parse_rows
    from rag_api.evaluation.request import EvalBody
    from rag_api.ops.interface import EVAL, OnCollection

    if modes:
        fields["modes"] = [m.strip() for m in modes.split(",") if m.strip()]
    if generate is not None:
        if path.exists():
            raise click.BadParameter(
                f"{path} exists: --generate writes a new file", param_hint="QUESTIONS"
            )
        fields["generate"] = generate
    else:
        fields["questions"] = [q.as_dict() for q in load_questions(path)]
    try:
        body = EvalBody(**fields)
    except ValidationError as exc:
        raise click.BadParameter(exc.errors()[0]["msg"]) from None
    with store_owner(settings, admin=False) as owner:
        document = owner.run(EVAL, OnCollection(collection=collection, body=body))
    if generate is not None:
        drafted = parse_rows(list(enumerate(document["generated"], 1)), "generated")
        path.write_text(dump_questions(drafted), encoding="utf-8")
        click.echo(f"wrote {len(drafted)} drafted questions to {path}", err=True)
    return document


def render(document: dict[str, Any]) -> str:
    """The table, the unknown sources, and --tune's block."""
    k = document["k"]
    lines = [
        f"{document['collection']}: {document['questions']} questions "
        f"({document['in_scope']} in scope), configured {document['configured']}"
    ]
    if document.get("warning"):
        lines.append(f"warning: {document['warning']}")
    titles = [title.format(k=k) for title, _ in COLUMNS]
    lines.append(f"{'':<14}" + "".join(f"{t:>10}" for t in titles))
    for row in document["rows"]:
        name = ("* " if row["configured"] else "  ") + row["label"]
        cells = "".join(_cell(key, row.get(key.format(k=k))) for _, key in COLUMNS)
        lines.append(f"{name:<14}{cells}")
    lines.append(
        "* configured. no-answer: in-scope questions answered with no passage (threshold too "
        "high); wrong-src: questions answered only from wrong sources (too low)"
    )
    if document["unknown_sources"]:
        lines.append(
            "warning: sources the collection does not hold (typos score 0): "
            + ", ".join(document["unknown_sources"])
        )
    if "tune" in document:
        lines.append("")
        lines.append(render_tune(document["tune"]))
    return "\n".join(lines)


def render_tune(tuned: dict[str, Any]) -> str:
    """The best retrieval block as YAML, each changed key with its old value, and the verdict."""
    from ruamel.yaml.comments import CommentedMap

    from rag_api.config import yaml_text

    block = CommentedMap(tuned["best"])
    for key, change in tuned["changes"].items():
        block.yaml_add_eol_comment(f"was {change['from']}", key)
    score, cv = tuned["score"], tuned["cross_validated"]
    lines = [
        f"# score {score['current']:.4f} -> {score['best']:.4f} ({tuned['gain']:+.4f}) in-sample, "
        f"{tuned['tried']} settings tried",
    ]
    if cv["score"] is not None:
        lines.append(
            f"# cross-validated ({cv['folds']}-fold): {cv['score']:.4f} ({cv['gain']:+.4f}); "
            f"noise ±{tuned['noise']:.4f}"
        )
    families = ", ".join(f"{name} {value:.4f}" for name, value in tuned["families"].items())
    lines.append(f"# best per mode: {families}")
    if not tuned["thresholds_tuned"]:
        lines.append('# thresholds not tuned: no out-of-scope question ("sources": []) to refuse')
    lines.append(yaml_text({"retrieval": block}).rstrip())
    lines.append(
        f"# not worth writing: {tuned['refused']}" if tuned["refused"] else "# --write applies it"
    )
    return "\n".join(lines)


def _write(settings: Settings, collection: str, tuned: dict[str, Any]) -> None:
    from rag_api.config import RetrievalConfig, load_config
    from rag_api.ops.config import file as config_file
    from rag_api.ops.server.listening import recorded_url

    if tuned["refused"]:
        click.echo(f"not written: {tuned['refused']}", err=True)
        sys.exit(1)
    if problem := config_file.writable_or_why(settings.config):
        click.echo(f"error: {problem}", err=True)
        sys.exit(1)
    current = load_config(settings.config).collection(collection).retrieval
    best = RetrievalConfig.model_validate(current.model_dump() | tuned["best"])
    if config_file.set_retrieval(settings.config, collection, best):
        click.echo(f"{settings.config}: {collection}'s retrieval updated", err=True)
        if recorded_url(settings) is not None:
            click.echo("a server is running: restart it to apply the new settings", err=True)


def _cell(key: str, value: Any) -> str:
    if value is None:
        return f"{'-':>10}"
    return f"{value:>10.1f}" if key == "p50_ms" else f"{value:>10.3f}"
