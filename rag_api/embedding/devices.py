"""Where an in-process model runs: `device` (auto | cpu | cuda | cuda:N | mps) resolved against what
the installed torch can use, and the precision a model runs at there (docs/configuration.md,
"Devices").

Nothing here loads a model; torch is imported only to ask what it can use, and a process without
torch (a serving install on ONNX Runtime alone) runs everything on the CPU.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from rag_api.errors import ConfigError

if TYPE_CHECKING:
    from rag_api.config import EmbedderConfig

log = logging.getLogger("rag_api.devices")

# vectors of a device and precision agreeing with the fp32 CPU path at least this much (cosine, on
# every sample text) share the model's identity: a collection moves between a CPU and a GPU
# machine without a re-index. Below it they would be another model's vectors (a migration).
SHARED_COSINE = 0.999
GPU_BATCH = 128  # texts a call on a GPU when the config names no batch_size (length-sorted)


@dataclass(frozen=True)
class Placement:
    """Where an embedder runs: its batches' device and precision, and its queries' device."""

    device: str  # cpu, cuda:0, mps, or the URL of a remote provider
    precision: str | None  # fp32, fp16, bf16, int8; None for a remote provider
    query_device: str | None = None  # where one query runs, when not on `device`

    def view(self) -> dict[str, str | None]:
        return {
            "device": self.device,
            "precision": self.precision,
            "query_device": self.query_device or self.device,
        }

    def __str__(self) -> str:
        queries = f", queries on {self.query_device}" if self.query_device else ""
        return f"{self.device} {self.precision or ''}".strip() + queries


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


@functools.cache
def found() -> str:
    """What the installed runtime can use, in words (for logs and refusals)."""
    torch = _torch()
    if torch is None:
        return "torch is not installed"
    version = torch.__version__
    if torch.cuda.is_available():
        count = torch.cuda.device_count()
        names = ", ".join(f"cuda:{i} {torch.cuda.get_device_name(i)}" for i in range(count))
        return f"torch {version}: {count} CUDA device{'s' if count > 1 else ''} ({names})"
    if _mps_available(torch):
        return f"torch {version}: Apple GPU (mps), no CUDA device"
    if torch.version.cuda is None:
        return f"torch {version}: a CPU-only build, no CUDA device"
    return f"torch {version} (CUDA {torch.version.cuda}): no CUDA device visible"


def _mps_available(torch) -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def _cuda_count() -> int:
    torch = _torch()
    return torch.cuda.device_count() if torch is not None and torch.cuda.is_available() else 0


def concrete(requested: str, what: str = "model") -> str:
    """The device `requested` names on this machine: auto takes a GPU when torch can use one;
    cuda, cuda:N and mps without one are a ConfigError naming the device and what was found."""
    if requested == "cpu":
        return "cpu"
    if requested == "auto":
        if _cuda_count():
            return "cuda:0"
        torch = _torch()
        return "mps" if torch is not None and _mps_available(torch) else "cpu"
    if requested == "mps":
        torch = _torch()
        if torch is None or not _mps_available(torch):
            raise ConfigError(f"{what}: device mps, but no Apple GPU was found ({found()})")
        return "mps"
    index = int(requested.partition(":")[2] or 0)
    count = _cuda_count()
    if index >= count:
        have = "no CUDA device" if count == 0 else f"CUDA devices cuda:0..cuda:{count - 1} only"
        raise ConfigError(
            f"{what}: device {requested}, but this machine has {have} ({found()}); "
            "use device: auto or cpu, or install the CUDA build of torch (docs/configuration.md)"
        )
    return f"cuda:{index}"


def problem(requested: str, what: str = "model") -> str | None:
    """Why `requested` cannot be used here (rag-hub config check), or None."""
    try:
        concrete(requested, what)
    except ConfigError as exc:
        return exc.message
    return None


def precision_for(device: str, requested: str) -> str:
    """The precision a torch model runs at: fp32 on the CPU, fp16 on a GPU, unless named."""
    if requested != "auto":
        return requested
    return "fp32" if device == "cpu" else "fp16"


def planned(cfg: EmbedderConfig) -> Placement:
    """Where an in-process embedder will run, before it is loaded (the start check may still
    move a straying precision to fp32)."""
    if cfg.provider != "sentence-transformers":
        return Placement("cpu", "fp32")
    if cfg.runtime == "onnx-int8":
        return Placement("cpu", "int8")
    try:
        device = concrete(cfg.device)
    except ConfigError:
        return Placement(f"{cfg.device} (not found)", None)
    return Placement(device, precision_for(device, cfg.precision))


def announce(what: str, requested: str, device: str, detail: str = "") -> None:
    """The one start line saying where a model runs (and why, for auto)."""
    why = f" (device auto; {found()})" if requested == "auto" else ""
    log.info("%s runs on %s%s%s", what, device, detail, why)


def agreement(reference: np.ndarray, candidate: np.ndarray) -> float:
    """The lowest cosine between two sets of L2-normalised rows of the same texts."""
    return float((np.asarray(reference) * np.asarray(candidate)).sum(axis=1).min())


def dtype_of(precision: str):
    """The torch dtype of a precision name."""
    import torch

    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[precision]
