"""Exporting a sentence-transformers folder to ONNX, once per model fingerprint.

The export is the only step of the ONNX encoder that needs torch: it loads the folder's weights
with transformers, traces the transformer with ``torch.onnx.export`` (the TorchScript exporter:
no onnxscript, no hub), lets ONNX Runtime's BERT optimizer fuse attention and layer norms, then
writes an int8 copy (dynamic quantization) next to the fp32 one. Both are checked against the
torch model on real passages before they are published; an int8 copy that falls below
``INT8_MIN_COSINE`` is not published and the encoder uses fp32 for that model.

Exports live in ``<toolsift cache>/onnx/<folder name>-<fingerprint>/`` (never inside the model
folder: writing there would change its fingerprint). A folder written again (``toolsift tune``)
has a new fingerprint, hence a new export directory: a stale export is never reused.
``export.json`` is written last, so its presence means the directory is complete; two processes
exporting at once serialize on a lock file and the second one finds the first one's export.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from .errors import RouterError
from .model import file_lock

# Bump when the export recipe changes: older export directories are then ignored.
EXPORT_VERSION = 1
META = "export.json"
FP32, INT8 = "model-fp32.onnx", "model-int8.onnx"
# Per-vector cosine to the torch encoder that an export must reach on the check passages to be
# published (fp32 reaches 0.99999+; int8 0.993-0.996 on the bundled Gorilla passages).
FP32_MIN_COSINE = 0.9999
INT8_MIN_COSINE = 0.99
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def cache_root() -> Path:
    """Where exports go: ``$TOOLSIFT_CACHE/onnx`` (default ~/.cache/toolsift/onnx)."""
    return Path(os.environ.get("TOOLSIFT_CACHE", Path.home() / ".cache" / "toolsift")) / "onnx"


def export_dir(model_dir: str | os.PathLike[str], fingerprint: str) -> Path:
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", Path(model_dir).name)[:40]
    return cache_root() / f"{name}-{fingerprint}-v{EXPORT_VERSION}"


def read_meta(directory: Path) -> dict | None:
    """The export's metadata, or None when the directory holds no complete export."""
    try:
        meta = json.loads((directory / META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("version") != EXPORT_VERSION or not (directory / FP32).is_file():
        return None
    return meta


def ensure_export(model_dir: str, fingerprint: str, check_texts: Sequence[str] = ()) -> tuple[Path, dict]:
    """The export directory of ``model_dir`` at ``fingerprint``, exporting it first if needed
    (imports torch; ~15-30 s on 2 cores). Safe when several processes call it at once."""
    directory = export_dir(model_dir, fingerprint)
    meta = read_meta(directory)
    if meta is not None:
        return directory, meta
    directory.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(directory.parent / f".{directory.name}.lock"):
        meta = read_meta(directory)  # another process may have finished it while we waited
        if meta is None:
            meta = _export(model_dir, fingerprint, directory, check_texts)
    return directory, meta


def _export(model_dir: str, fingerprint: str, directory: Path, check_texts: Sequence[str]) -> dict:
    t0 = time.perf_counter()
    directory.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=directory, prefix=".export-"))
    try:
        raw = tmp / "raw.onnx"
        hidden, heads = _trace(model_dir, raw)
        fp32 = tmp / FP32
        fused = _optimize(raw, fp32, heads, hidden)
        int8 = tmp / INT8
        _quantize(fp32, int8)
        texts = list(check_texts) or _default_check_texts()
        cos = _check_against_torch(model_dir, {"fp32": fp32, "int8": int8}, texts)
        if cos["fp32"][0] < FP32_MIN_COSINE:
            raise RouterError(f"ONNX export of {model_dir} disagrees with torch (min cosine {cos['fp32'][0]:.5f})")
        int8_ok = cos["int8"][0] >= INT8_MIN_COSINE
        # the files first, the metadata last: a reader that sees export.json sees whole files
        os.replace(fp32, directory / FP32)
        if int8_ok:
            os.replace(int8, directory / INT8)
        meta = {"version": EXPORT_VERSION, "model_dir": str(model_dir), "fingerprint": fingerprint,
                "fused": fused, "int8": int8_ok, "check_passages": len(texts),
                "cosine_to_torch": {k: {"min": round(v[0], 6), "mean": round(v[1], 6)} for k, v in cos.items()},
                "seconds": round(time.perf_counter() - t0, 1), "created": time.time()}
        fd, tmp_meta = tempfile.mkstemp(dir=directory, prefix=".meta-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(meta, fh, indent=1)
        os.replace(tmp_meta, directory / META)
        return meta
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _trace(model_dir: str, out: Path) -> tuple[int, int]:
    """torch.onnx.export of the folder's transformer: token embeddings (batch, seq, hidden).
    Eager attention gives the plain MatMul/Softmax graph that ONNX Runtime's optimizer fuses."""
    import warnings

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    model = AutoModel.from_pretrained(model_dir, local_files_only=True, attn_implementation="eager").eval()

    class TokenEmbeddings(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):  # keywords: positions moved in transformers 5
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    dummy = tuple(torch.ones(2, 16, dtype=torch.long) if n != "token_type_ids" else torch.zeros(2, 16, dtype=torch.long)
                  for n in _INPUTS)
    axes = {n: {0: "batch", 1: "seq"} for n in (*_INPUTS, "token_embeddings")}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer chatter about constant shapes in the mask helpers
        torch.onnx.export(TokenEmbeddings(model), dummy, str(out), input_names=list(_INPUTS),
                          output_names=["token_embeddings"], dynamic_axes=axes, opset_version=17, dynamo=False)
    cfg = model.config
    return int(cfg.hidden_size), int(cfg.num_attention_heads)


def _optimize(raw: Path, out: Path, heads: int, hidden: int) -> bool:
    """Fuse attention / layer norm / GELU (ONNX Runtime's BERT optimizer, offline); the fused
    graph is what the int8 recipe below was measured on. Unfusable graphs are kept as they are."""
    import logging

    from onnxruntime.transformers.optimizer import optimize_model

    logging.getLogger("onnxruntime.transformers").setLevel(logging.ERROR)
    try:
        opt = optimize_model(str(raw), model_type="bert", num_heads=heads, hidden_size=hidden, opt_level=1)
        fused = opt.get_fused_operator_statistics().get("Attention", 0) > 0
        opt.save_model_to_file(str(out))
        return fused
    except Exception:  # an architecture the optimizer does not know: plain graph, still correct
        shutil.copyfile(raw, out)
        return False


def _quantize(fp32: Path, out: Path) -> None:
    """Dynamic int8: weights per output channel (per-tensor weights lost 5% cosine), activations
    per tensor at run time. The FFN output projections of the first half of the layers stay fp32:
    their inputs (GELU outputs) have the widest ranges, and quantizing them cost the most cosine
    (per-layer sensitivity on the Gorilla passages: 0.9980-0.9989 each vs 0.9993+ for the rest)."""
    import logging

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.getLogger("root").setLevel(logging.ERROR)  # "consider pre-processing" advice
    graph = onnx.load(str(fp32), load_external_data=False).graph
    ffn_out = {n.name: _layer_of(n.name) for n in graph.node if n.op_type == "MatMul" and _is_ffn_output(n.name)}
    n_layers = max(ffn_out.values(), default=-1) + 1
    keep_fp32 = [name for name, layer in ffn_out.items() if layer < max(1, n_layers // 2)]
    quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8, per_channel=True,
                     nodes_to_exclude=keep_fp32, extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})


def _is_ffn_output(name: str) -> bool:
    return "/output/dense/" in name and "/attention/" not in name


def _layer_of(name: str) -> int:
    m = re.search(r"layer\.(\d+)", name)
    return int(m.group(1)) if m else 0


def _default_check_texts(n: int = 96) -> list[str]:
    """Real passages to check an export on: every k-th bundled Gorilla API record (ships with
    toolsift, so the check needs no data download)."""
    from apidb.loaders import load

    from .text import record_passage

    root = Path(__file__).resolve().parents[1] / "apidb" / "data" / "gorilla"
    records = [r for f in sorted(root.glob("*_api.jsonl")) for r in load(f).records]
    step = max(1, len(records) // n)
    texts = [record_passage(r) for r in records[::step][:n]]
    return texts + ["classify sports activities in videos", "translate English text to French"]


def _check_against_torch(model_dir: str, files: dict[str, Path], texts: list[str]) -> dict[str, tuple[float, float]]:
    """(min, mean) cosine of each ONNX file's vectors to the sentence-transformers model's."""
    from .model import fresh_model
    from .onnx_encoder import OnnxEncoder

    ref = fresh_model(model_dir).encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True,
                                        show_progress_bar=False)
    out = {}
    for name, path in files.items():
        vecs = OnnxEncoder(model_dir, path).encode(texts)
        cos = np.sum(vecs * ref, axis=1)
        out[name] = (float(cos.min()), float(cos.mean()))
    return out

