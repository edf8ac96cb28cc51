"""`rag-hub config check`: what can be known about collections.yaml without the store."""

from __future__ import annotations

from dataclasses import dataclass, field

from rag_api.config import CollectionConfig, EmbedderConfig, HubConfig
from rag_api.embedding import devices
from rag_api.embedding.dims import dim_problem, offline_problem
from rag_api.embedding.languages import knows_language, model_languages
from rag_api.errors import RagError, redact
from rag_api.evaluation.questions import configured_file, load_questions
from rag_api.indexing import ocr
from rag_api.indexing.kb import folder_problem
from rag_api.llm.rerankers import Rerankers, RerankUnavailable
from rag_api.providers import EMBEDDERS
from rag_api.settings import Settings


@dataclass
class Review:
    """One collection: its summary line, what is wrong, and what could not be checked."""

    name: str
    line: str
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def review(settings: Settings, config: HubConfig, online: bool = False) -> list[Review]:
    """Each collection's kb folder, model name and vector size, checked as far as possible."""
    reviews = []
    for name, cfg in config.collections.items():
        embedder = cfg.embedder
        kb_path = config.kb_path(name)
        where = "fed through the admin API (no kb folder)" if kb_path is None else f"kb {kb_path}"
        item = Review(name, f"{name}: {embedder.id} {embedder.dim}d, {cfg.language}, {where}")
        if kb_path is not None and (problem := folder_problem(kb_path)):
            item.problems.append(problem)
        if (questions := configured_file(config, name)) is not None:
            try:
                load_questions(questions)  # what the nightly check will measure
            except RagError as exc:
                item.problems.append(f"eval: {exc.message}")
        if EMBEDDERS.get(embedder.provider).remote and not online:
            item.notes.append(f"dim of {embedder.id} not checked: --online asks the model")
        elif problem := (_asked(settings, embedder) if online else offline_problem(embedder)):
            item.problems.append(problem)
        _review_devices(item, name, cfg)
        _review_reranker(item, settings, cfg, online)
        if (
            note := _weighting_note(cfg.retrieval.side_weights, embedder, cfg.language)
        ) is not None:
            item.notes.append(note)
        if (note := _ocr_note(cfg)) is not None:
            item.notes.append(note)
        reviews.append(item)
    return reviews


def _ocr_note(cfg: CollectionConfig) -> str | None:
    """`ocr: auto` without Tesseract or without the collection's language pack."""
    if cfg.ocr != "auto":
        return None
    install = ocr.install_line(cfg.language)
    binary = ocr.find_tesseract()
    if binary is None:
        return (
            "ocr: auto, but Tesseract is not installed: scanned PDF pages and image files "
            f"are skipped ({install})"
        )
    packs = ocr.installed_packs(binary)
    if packs and ocr.pack(cfg.language) not in packs:
        return (
            f"ocr: the Tesseract language pack '{ocr.pack(cfg.language)}' is not installed, "
            f"OCR reads with '{ocr.FALLBACK_PACK}' ({install})"
        )
    return None


def _review_devices(item: Review, name: str, cfg: CollectionConfig) -> None:
    """`device` of the in-process models: one this machine lacks is a problem; auto a note."""
    blocks = []
    if cfg.embedder.provider == "sentence-transformers":
        blocks.append((f"embedder {cfg.embedder.id}", cfg.embedder.device))
    if cfg.rerank is not None and cfg.rerank.enabled and cfg.rerank.provider == "local":
        blocks.append((f"rerank model '{cfg.rerank.model}'", cfg.rerank.device))
    for what, device in blocks:
        if (problem := devices.problem(device, f"collection '{name}': {what}")) is not None:
            item.problems.append(problem)
        elif device == "auto":
            item.notes.append(
                f"{what}: device auto runs on {devices.concrete(device)} here ({devices.found()})"
            )


def _review_reranker(item: Review, settings: Settings, cfg: CollectionConfig, online: bool) -> None:
    """A rerank server: asked once with --online, else a note."""
    rerank = cfg.rerank
    if rerank is None or rerank.provider != "http":
        return
    if not online:
        item.notes.append(f"rerank server {redact(rerank.base_url)} not checked: --online asks it")
        return
    try:
        Rerankers(settings).get(rerank).scores("config check", ["config check"])
    except RerankUnavailable as exc:
        item.problems.append(f"rerank model '{rerank.model}': {exc}")


def _weighting_note(setting: str, embedder: EmbedderConfig, language: str) -> str | None:
    """Why hybrid search will not weigh this collection's two sides equally (`auto`), if so."""
    if setting != "auto" or knows_language(embedder, language):
        return None
    if model_languages(embedder) is None:
        return (
            f"hybrid search weighs dense and BM25 by stand-out: which languages {embedder.id} "
            f"knows is not known (embedder.languages: [{language}] if it knows {language})"
        )
    return (
        f"hybrid search weighs dense and BM25 by stand-out: {embedder.id} does not know "
        f"'{language}' (a model that does may be better here)"
    )


def _asked(settings: Settings, embedder: EmbedderConfig) -> str | None:
    """The problem with `embedder`, asking remote models for their real size."""
    if not EMBEDDERS.get(embedder.provider).remote:
        return offline_problem(embedder)
    from rag_api.embedding.embedders import Embedders

    try:
        return dim_problem(embedder, Embedders(settings).get(embedder).dimension())
    except RagError as exc:
        return exc.message
