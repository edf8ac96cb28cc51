"""Writing the ONNX files of a local sentence-transformers model: export, graph fusion, int8
(docs/architecture.md, "ONNX Runtime"; the int8 variants tried: docs/performance.md)."""

from __future__ import annotations

import logging
import re
import sys
import warnings
from pathlib import Path

log = logging.getLogger("rag_api.onnx")

FP32_FILE = "model.onnx"
INT8_FILE = "model.int8.onnx"
QUANTISED_OPS = ["MatMul", "Attention"]  # not the embedding tables (EmbedLayerNormalization)


def export_pipeline(work: Path, source: Path, sample: list[str]) -> dict:
    """Write `work/model.onnx` (fused where the optimizer can) and `work/tokenizer.json`;
    return the manifest's model fields."""
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(
        str(source), device="cpu", model_kwargs={"attn_implementation": "eager"}
    )
    tokenize = getattr(model, "preprocess", None) or model.tokenize  # renamed in s-t 6
    features = tokenize(sample)
    inputs = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in features]

    class Pipeline(torch.nn.Module):
        """The whole sentence-transformers pipeline, called with named tensors."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
            return self.model(dict(zip(inputs, tensors, strict=True)))["sentence_embedding"]

    plain = work / "model.plain.onnx"
    axes = {k: {0: "batch", 1: "tokens"} for k in inputs}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on shape-dependent Python branches
        torch.onnx.export(
            Pipeline().eval(),
            tuple(features[k] for k in inputs),
            str(plain),
            input_names=inputs,
            output_names=["sentence_embedding"],
            dynamic_axes={**axes, "sentence_embedding": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )
    model.tokenizer.backend_tokenizer.save(str(work / "tokenizer.json"))
    config = getattr(model[0], "auto_model", None)
    fused = _fuse(plain, work / FP32_FILE, getattr(config, "config", None))
    plain.unlink(missing_ok=True)
    return {
        "inputs": inputs,
        "max_seq_length": int(model.max_seq_length),
        "normalized": any(type(m).__name__ == "Normalize" for m in model),
        "fused": fused,
    }


def _fuse(plain: Path, target: Path, config: object) -> dict[str, int]:
    """The optimizer's fused graph at `target` (counts of fused operators), or the plain graph."""
    heads = int(getattr(config, "num_attention_heads", 0) or 0)
    hidden = int(getattr(config, "hidden_size", 0) or 0)
    try:
        from onnxruntime.transformers.optimizer import optimize_model

        optimized = optimize_model(
            str(plain),
            model_type="bert",
            num_heads=heads,
            hidden_size=hidden,
            opt_level=1,  # graph fusions only: the session applies the rest at load
            use_gpu=False,
        )
        stats = {k: int(v) for k, v in optimized.get_fused_operator_statistics().items() if v}
        optimized.save_model_to_file(str(target))
        return stats
    except Exception as exc:  # an architecture the fusions do not know: the plain graph works
        log.warning("ONNX graph fusion skipped (%s): the plain export is used", exc)
        plain.replace(target)
        return {}


def quantize(folder: Path) -> None:
    """`model.int8.onnx` beside `model.onnx` (see the module docstring for what was measured)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    print(f"quantising {folder.name} to int8 (once)", file=sys.stderr)
    graph = onnx.load(str(folder / FP32_FILE), load_external_data=False).graph
    keep = [node.name for node in graph.node if _stays_fp32(node.name)]
    tmp = folder / f".{INT8_FILE}.tmp"
    quantize_dynamic(
        str(folder / FP32_FILE),
        str(tmp),
        weight_type=QuantType.QInt8,
        per_channel=True,
        op_types_to_quantize=QUANTISED_OPS,
        nodes_to_exclude=keep,
        # the fused operators are in the com.microsoft domain: shape inference cannot type them
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )
    tmp.replace(folder / INT8_FILE)


def _stays_fp32(name: str) -> bool:
    """Each layer's FFN output projection: its input (the GELU output) has the outlier channels
    BERT-style models are known for, which per-tensor activation scales flatten."""
    return re.search(r"layer\.\d+/output/dense/", name) is not None
