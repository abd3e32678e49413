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

from ..errors import RouterError
from ..locks import cache_folder
from .model import file_lock

# Bump when the export recipe changes: older export directories are then ignored. An int8
# recipe change also changes INT8_SPACE, the name of the vectors it makes (router.encoders.dense.vector_space):
# caches and index manifests of the old int8 vectors then no longer match (stale, re-embedded).
EXPORT_VERSION = 2
INT8_SPACE = "int8-v2"
SMOOTH_ALPHA = 0.75  # see _quantize
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
    (imports torch: the training extra; 15-160 s on 2 shared cores, announced by one line on
    stderr). Safe when several processes call it at once."""
    directory = export_dir(model_dir, fingerprint)
    meta = read_meta(directory)
    if meta is not None:
        return directory, meta
    from .model import require_train

    require_train(f"converting {model_dir} to ONNX")
    import sys

    print(f"toolsift: converting {Path(model_dir).name} for ONNX Runtime (once per model; 15-160 s) ...",
          file=sys.stderr, flush=True)
    cache_folder(directory.parent)
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
        texts = list(check_texts) or _default_check_texts()
        _quantize(fp32, int8, model_dir, _default_check_texts())
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


def _quantize(fp32: Path, out: Path, model_dir: str, calibration: Sequence[str]) -> None:
    """Dynamic int8 after moving activation outliers into the weights; only the first layer's
    FFN output projection stays fp32.

    Weights are int8 per output channel (per-tensor weights lost 5% cosine); activations are
    quantized per tensor at run time, so one channel with a wide range (GELU outputs most of
    all) costs every other channel its resolution. So each MatMul input channel j is first
    divided by s_j = max|x_j|^a / max|W_j|^(1-a) (max|x_j| over the calibration passages,
    a = SMOOTH_ALPHA) and row j of W multiplied by it: the product is the same in exact
    arithmetic, the activation ranges are flatter (SmoothQuant's idea).
    Measured on 4,525 passages of the 14 benchmark catalogs, per-vector cosine to torch:
    recipe 1 (no smoothing, the first half's FFN outputs fp32: 15 of 18 MatMuls int8) min 0.9926,
    mean 0.9971; smoothed, all 18 int8: min 0.9900 (one LiveMCPBench passage below 0.99);
    smoothed, 17 int8 (this): min 0.9942, mean 0.9979, and one query ~13% less CPU than recipe 1
    (interleaved, load ~12). alpha 0.75 was best of 0.5-0.95 (0.5: min 0.973, 0.85: 0.991 on
    814 of these passages with all 18 int8)."""
    import logging

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.getLogger("root").setLevel(logging.ERROR)  # "consider pre-processing" advice
    smoothed = out.with_name("smoothed.onnx")
    _smooth(fp32, smoothed, model_dir, calibration)
    graph = onnx.load(str(smoothed), load_external_data=False).graph
    keep_fp32 = [n.name for n in graph.node if n.op_type == "MatMul" and _is_ffn_output(n.name) and _layer_of(n.name) == 0]
    quantize_dynamic(str(smoothed), str(out), weight_type=QuantType.QInt8, per_channel=True,
                     nodes_to_exclude=keep_fp32, extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    smoothed.unlink()


def _channel_ranges(model, inputs: list[str], model_dir: str, texts: Sequence[str]) -> dict[str, np.ndarray]:
    """max |x_j| of each named tensor's last-axis channels over ``texts`` (each run alone, as
    the encoder runs them), from an fp32 session that also outputs those tensors."""
    import onnx
    import onnxruntime as ort

    from .onnx_encoder import TextTokenizer, feed

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    probe.graph.output.extend(onnx.helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, None) for n in inputs)
    session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    tokenize = TextTokenizer(model_dir)
    names = [i.name for i in session.get_inputs()]
    ranges: dict[str, np.ndarray] = {}
    for enc in tokenize(list(texts)):
        outs = session.run(inputs, feed([enc], names)[0])
        for name, x in zip(inputs, outs):
            peak = np.abs(x.reshape(-1, x.shape[-1])).max(axis=0)
            ranges[name] = np.maximum(ranges[name], peak) if name in ranges else peak
    return ranges


def _smooth(fp32: Path, out: Path, model_dir: str, texts: Sequence[str]) -> None:
    """Write ``fp32`` with each weight MatMul's input divided per channel by s (a Mul node)
    and its weight rows multiplied by s (see _quantize)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(fp32))
    graph = model.graph
    weights = {i.name: i for i in graph.initializer}
    matmuls = [n for n in graph.node if n.op_type == "MatMul" and n.input[1] in weights]
    ranges = _channel_ranges(model, [n.input[0] for n in matmuls], model_dir, texts)
    nodes = []
    for node in graph.node:
        if node in matmuls:
            w = numpy_helper.to_array(weights[node.input[1]]).astype(np.float32)
            s = (np.maximum(ranges[node.input[0]], 1e-5) ** SMOOTH_ALPHA
                 / np.maximum(np.abs(w).max(axis=1), 1e-5) ** (1 - SMOOTH_ALPHA)).astype(np.float32)
            weights[node.input[1]].CopyFrom(numpy_helper.from_array(w * s[:, None], node.input[1]))
            inv, scaled = f"{node.name}/smooth_inv", f"{node.name}/smoothed_input"
            graph.initializer.append(numpy_helper.from_array((1.0 / s).astype(np.float32), inv))
            nodes.append(onnx.helper.make_node("Mul", [node.input[0], inv], [scaled], name=f"{node.name}/smooth"))
            node.input[0] = scaled
        nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.save(model, str(out))


def _is_ffn_output(name: str) -> bool:
    return "/output/dense/" in name and "/attention/" not in name


def _layer_of(name: str) -> int:
    m = re.search(r"layer\.(\d+)", name)
    return int(m.group(1)) if m else 0


def _default_check_texts(n: int = 96) -> list[str]:
    """Real passages to check an export on: every k-th bundled Gorilla API record (ships with
    toolsift, so the check needs no data download)."""
    from apidb.loaders import load

    from ..text import record_passage

    root = Path(__file__).resolve().parents[2] / "apidb" / "data" / "gorilla"
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

