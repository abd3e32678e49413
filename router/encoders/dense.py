"""Dense retrieval: a lazily loaded encoder (ONNX Runtime by default, sentence-transformers as
the reference and the fallback) and an embedding cache keyed by (model id, record content hash).
The faiss side is in router.index.vector_index.

Encoding is the expensive part, so vectors are cached on disk by content hash: a re-index
after one changed record encodes one record.

Encoders (``Embedder(encoder=...)``, ``Router(encoder=...)`` or ``$TOOLSIFT_ENCODER``):
``torch`` (sentence-transformers), ``onnx-fp32`` (same vectors: cosine to torch >= 0.9999),
``onnx-int8`` (dynamic int8: cosine to torch >= 0.99, faster), ``onnx`` = the default precision.
fp32 and torch vectors share one cache; int8 vectors are another vector space with their own
cache and index, so a query is never compared with vectors of the other precision.
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from ..errors import RouterError
from ..locks import cache_folder
from .model import (BASE_MODEL, DEFAULT_MODEL, check_model, file_lock, folder_fingerprint, fresh_model,  # noqa: F401
                    load_model, model_identity, model_path)  # (re-exported: callers import the model helpers from here)
from .onnx_encoder import OnnxEncoder, span_vectors  # light: onnxruntime and tokenizers load on first use
from ..threads import intra_op_threads  # noqa: F401  (sets OMP_WAIT_POLICY first; re-exported)

ENCODERS = ("onnx", "onnx-int8", "onnx-fp32", "torch")
DEFAULT_ONNX = "onnx-int8"


def resolve_encoder(encoder: str | None = None) -> str:
    """The concrete encoder for a setting: the argument, else $TOOLSIFT_ENCODER, else "onnx"."""
    name = (encoder or os.environ.get("TOOLSIFT_ENCODER") or "onnx").strip().lower()
    if name not in ENCODERS:
        raise RouterError(f"unknown encoder {name!r}: use one of {', '.join(ENCODERS)}")
    return DEFAULT_ONNX if name == "onnx" else name


def vector_space(encoder: str | None = None) -> str:
    """Which vectors an encoder makes: "fp32" (torch and onnx-fp32 agree to 1e-4) or the int8
    recipe's space (router.encoders.onnx_export.INT8_SPACE, "int8-v2"): a new int8 recipe makes other
    vectors, so its caches and index manifests must not match the old recipe's."""
    from .onnx_export import INT8_SPACE

    return INT8_SPACE if resolve_encoder(encoder) == "onnx-int8" else "fp32"


_ONNX: dict[str, OnnxEncoder] = {}  # one session per (folder, fingerprint, precision) and process
_ONNX_LOCK = threading.Lock()


def load_onnx_encoder(model_id: str = DEFAULT_MODEL, encoder: str = DEFAULT_ONNX):
    """The OnnxEncoder for ``model_id`` at the encoder's precision, shared per process: the
    default model at int8 is shipped ready (router.encoders.shipped); anything else is exported on
    first use (router.encoders.onnx_export: the training extra, then cached by the folder's
    fingerprint). Raises UnsupportedModel / RouterError when ONNX cannot serve it."""
    from .onnx_encoder import folder_config
    from .onnx_export import FP32, INT8, ensure_export

    if model_id == DEFAULT_MODEL and encoder == "onnx-int8":
        from .shipped import SHIPPED_DIR, shipped_graph

        graph = shipped_graph()
        if graph is not None:
            key = f"shipped:{graph}"
            with _ONNX_LOCK:
                if key not in _ONNX:
                    _ONNX[key] = OnnxEncoder(SHIPPED_DIR, graph)
                return _ONNX[key]
    path = model_path(model_id)
    fingerprint = folder_fingerprint(path)  # also for the bundled model: a reinstall re-exports
    key = f"{path}@{fingerprint}#{encoder}"
    with _ONNX_LOCK:
        if key not in _ONNX:
            folder_config(path)  # refuse unsupported folders before any export work
            directory, meta = ensure_export(path, fingerprint)
            use_int8 = encoder == "onnx-int8" and meta.get("int8")
            _ONNX[key] = OnnxEncoder(path, directory / (INT8 if use_int8 else FP32))
        return _ONNX[key]


def prepare_onnx(model_id: str, check_texts: Sequence[str] = ()) -> dict:
    """Export ``model_id`` to ONNX now (not at its first query) and return the export's
    metadata (cosines to torch, whether int8 kept quality). ``check_texts``: passages to check
    the export on (default: bundled Gorilla passages)."""
    from .onnx_encoder import folder_config
    from .onnx_export import ensure_export

    path = model_path(model_id)
    folder_config(path)
    return ensure_export(path, folder_fingerprint(path), check_texts)[1]


class Embedder:
    """Encodes text with one model and one encoder; counts what it encoded (tests assert on it).

    ``encoder`` None reads $TOOLSIFT_ENCODER (default "onnx"). An ONNX encoder that cannot
    serve the model (unsupported folder, export failure) falls back to torch with a warning;
    ``backend`` then says what actually encodes.
    """

    def __init__(self, model_id: str = DEFAULT_MODEL, encoder: str | None = None) -> None:
        check_model(model_id)  # fail early, before any expensive work, on an unknown model
        self.model_id = model_id
        self.encoder = resolve_encoder(encoder)
        self.backend = self.encoder
        self.docs_encoded = 0
        self._model = None

    @property
    def model(self):
        """The loaded encoder: an OnnxEncoder, or the SentenceTransformer for "torch"."""
        # Pinned at first use: a router's query vectors must come from the weights its document
        # vectors came from, even if the folder is tuned again while it runs (and a query then
        # costs no look at the folder's files).
        if self._model is None:
            self._model = self._load()
        return self._model

    def _load(self):
        if self.encoder != "torch":
            try:
                return load_onnx_encoder(self.model_id, self.encoder)
            except Exception as exc:  # the reference path still serves the model
                import warnings

                from .model import require_train, train_installed

                if not train_installed():  # no torch to fall back on: say why, in one line
                    if isinstance(exc, RouterError):
                        raise  # its message names the extra already
                    require_train(f"{self.model_id} ({exc})")

                warnings.warn(f"ONNX encoder unavailable for {self.model_id} ({exc}); using torch", stacklevel=3)
                self.backend = "torch"
        return load_model(self.model_id)

    def encode(self, texts: Sequence[str], *, batch_size: int = 64,
               on_batch: Callable[[int], None] | None = None) -> np.ndarray:
        """Normalized float32 vectors, one row per text; ``on_batch(n)`` after each batch."""
        model = self.model
        if isinstance(model, OnnxEncoder):  # sorts the texts by length itself
            vecs = model.encode(texts, on_batch=on_batch)
            self.docs_encoded += len(texts)
            return vecs
        out = []
        for i in range(0, len(texts), batch_size):
            chunk = list(texts[i:i + batch_size])
            out.append(model.encode(chunk, batch_size=batch_size, convert_to_numpy=True,
                                    normalize_embeddings=True, show_progress_bar=False))
            self.docs_encoded += len(chunk)
            if on_batch:
                on_batch(len(chunk))
        if not out:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.ascontiguousarray(np.vstack(out), dtype=np.float32)

    def encode_query(self, text: str) -> np.ndarray:
        """A (1, dim) vector, on one thread."""
        model = self.model
        if isinstance(model, OnnxEncoder):
            return model.encode_query(text)[None, :]
        with intra_op_threads(1):
            return model.encode([text], convert_to_numpy=True, normalize_embeddings=True,
                                show_progress_bar=False).astype(np.float32)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) query vectors: one pass per text, texts on all cores at once (ONNX), one batch (torch)."""
        model = self.model
        if isinstance(model, OnnxEncoder):
            if len(texts) > 1:  # one text per core at once; each alone in its run, so the same vectors
                return model.encode(list(texts))
            return np.vstack([model.encode_query(t) for t in texts]).astype(np.float32)
        enc = model.encode(list(texts), convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(enc, dtype=np.float32)

    @property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension())


def encode_with_spans(model, text: str, spans: Sequence[tuple[int, int]]) -> np.ndarray:
    """Normalized vectors of ``text`` and of each character span of it, from ONE forward pass:
    row 0 is the model's own sentence embedding, row i the mean of the token embeddings
    inside span i (a sentence read in the context of the whole request). Costs one query
    encode instead of 1 + len(spans). Spans cut off by the model's length limit are dropped.
    ``model``: an Embedder's ``.model`` (OnnxEncoder or SentenceTransformer) or an Embedder.
    """
    if isinstance(model, Embedder):
        model = model.model
    if isinstance(model, OnnxEncoder):
        return model.encode_with_spans(text, spans)
    with intra_op_threads(1):
        out = model.encode([text], output_value=None, show_progress_bar=False)[0]
    tokens = out["token_embeddings"].float().numpy()
    offsets = np.asarray(model.tokenizer(text, return_offsets_mapping=True, truncation=True,
                                         max_length=model.max_seq_length)["offset_mapping"])[:len(tokens)]
    return span_vectors(out["sentence_embedding"].float().numpy(), tokens, offsets, spans)


def default_cache_dir() -> Path:
    """Where embeddings are cached across catalogs: ``$TOOLSIFT_CACHE`` or ``~/.cache/toolsift``."""
    return Path(os.environ.get("TOOLSIFT_CACHE", Path.home() / ".cache" / "toolsift"))


def _slug(model_id: str) -> str:
    base = re.sub(r"[^A-Za-z0-9_.-]", "_", Path(model_id).name or model_id)[:40]
    return f"{base}-{hashlib.sha256(model_id.encode()).hexdigest()[:8]}"


class EmbeddingCache:
    """Vectors by content hash for one model, in one ``.npz`` file replaced atomically.

    Several processes may share a cache directory: each write merges what is on disk
    with what is in memory, then renames a temp file over the old one, so a reader sees
    either the old or the new file, never a half-written one.
    """

    def __init__(self, directory: str | os.PathLike[str], model_id: str, encoder: str | None = None) -> None:
        self.dir = Path(directory)
        # One file per model id and vector space; it holds vectors of one identity (a retuned
        # folder's new weights discard the old vectors on the next save instead of piling up files).
        space = vector_space(encoder)
        self.path = self.dir / f"emb-{_slug(model_id)}{'' if space == 'fp32' else '-' + space}.npz"
        self.model_id = cache_identity(model_id, encoder)
        self._vecs: dict[str, np.ndarray] = {}
        self._dirty = False
        self._lock = threading.Lock()
        self._read()

    def _read(self) -> None:
        if not self.path.exists():
            return
        try:
            with np.load(self.path, allow_pickle=False) as z:
                if str(z["model"]) != self.model_id:
                    return
                keys, vecs = z["keys"], z["vecs"]
        except Exception:  # a corrupt cache is only a cache: start empty, rewrite on save
            return
        for k, v in zip(keys.tolist(), vecs):
            self._vecs.setdefault(k, v)

    def __len__(self) -> int:
        return len(self._vecs)

    def get_many(self, hashes: Iterable[str]) -> list[np.ndarray | None]:
        return [self._vecs.get(h) for h in hashes]

    def put_many(self, hashes: Sequence[str], vecs: np.ndarray) -> None:
        with self._lock:
            for h, v in zip(hashes, vecs):
                self._vecs[h] = v
            self._dirty = True

    def save(self) -> None:
        with self._lock:
            if not self._dirty:
                return
            cache_folder(self.dir)
            with file_lock(self.path.with_suffix(".lock")):
                self._merge_and_write()
            self._dirty = False

    def _merge_and_write(self) -> None:
        on_disk = EmbeddingCache.__new__(EmbeddingCache)
        on_disk.path, on_disk.model_id, on_disk._vecs = self.path, self.model_id, {}
        on_disk._read()
        for k, v in on_disk._vecs.items():
            self._vecs.setdefault(k, v)
        keys = list(self._vecs)
        vecs = np.vstack([self._vecs[k] for k in keys]).astype(np.float32)
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".emb-", suffix=".npz")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, keys=np.array(keys), vecs=vecs, model=np.array(self.model_id))
            os.replace(tmp, self.path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)


_CACHES: dict[tuple[str, str], EmbeddingCache] = {}
_CACHES_LOCK = threading.Lock()


def cache_identity(model_id: str, encoder: str | None = None) -> str:
    """What a cache's vectors are keyed by: the model identity, plus the vector space when it
    is not fp32 (so fp32 caches written before the ONNX encoder stay valid)."""
    space = vector_space(encoder)
    return model_identity(model_id) + ("" if space == "fp32" else f"#{space}")


def shared_cache(directory: str | os.PathLike[str], model_id: str, encoder: str | None = None) -> EmbeddingCache:
    """One in-memory cache per (directory, model, vector space) per process, so routers built
    from the same tool lists again and again never touch the disk after the first time."""
    key = (str(Path(directory).resolve()), cache_identity(model_id, encoder))
    with _CACHES_LOCK:
        if key not in _CACHES:
            _CACHES[key] = EmbeddingCache(directory, model_id, encoder)
        return _CACHES[key]


class EmbeddingInterrupted(KeyboardInterrupt):
    """Ctrl-C during embed_with_cache, after the vectors made so far were saved to the cache:
    ``kept`` of the ``wanted`` missing vectors are there for the next run. A KeyboardInterrupt,
    so code that does not know it still stops."""

    def __init__(self, kept: int, wanted: int, where: str) -> None:
        super().__init__(f"{kept} of {wanted} embeddings kept in {where}")
        self.kept, self.wanted, self.where = kept, wanted, where


# texts encoded between two looks at Ctrl-C: what an interruption can lose (a few seconds' work)
INTERRUPT_GRAIN = 64
# Seconds of encoding between two saves of the cache. A save rewrites the whole cache file, so
# saving every 1,024 vectors cost a 20k-tool build 19 rewrites of a growing file (~3 s of its
# 82 s, with the encoder idle meanwhile); by time, a build saves a few times whatever its size.
CHECKPOINT_SECONDS = 30.0


def embed_with_cache(embedder: Embedder, cache: EmbeddingCache, hashes: Sequence[str],
                     text_of: Callable[[int], str] | Sequence[str], *, on_batch: Callable[[int], None] | None = None,
                     checkpoint_seconds: float = CHECKPOINT_SECONDS) -> tuple[np.ndarray, int]:
    """Vectors for every item, encoding only hashes the cache lacks; returns (vectors, encoded).
    ``text_of(i)`` renders item i, and is only called for items that must be encoded (a list
    of texts works too).

    The cache is saved every ``checkpoint_seconds`` of encoding, so a killed long build keeps all
    but its last seconds of work; on Ctrl-C it is saved with every vector made so far (up to INTERRUPT_GRAIN texts
    in flight are lost) and EmbeddingInterrupted says how many were kept.
    """
    if not callable(text_of):
        text_of = text_of.__getitem__
    found = cache.get_many(hashes)
    missing = [i for i, v in enumerate(found) if v is None]
    done = unsaved = 0
    last_save = time.monotonic()
    try:
        for start in range(0, len(missing), INTERRUPT_GRAIN):
            chunk = missing[start:start + INTERRUPT_GRAIN]
            vecs = embedder.encode([text_of(i) for i in chunk], on_batch=on_batch)
            cache.put_many([hashes[i] for i in chunk], vecs)
            for i, v in zip(chunk, vecs):
                found[i] = v
            done, unsaved = done + len(chunk), unsaved + len(chunk)
            if time.monotonic() - last_save >= checkpoint_seconds:
                cache.save()
                unsaved, last_save = 0, time.monotonic()
    except KeyboardInterrupt:
        cache.save()
        raise EmbeddingInterrupted(done, len(missing), cache_location(cache)) from None
    if unsaved:
        cache.save()
    if not found:
        return np.zeros((0, embedder.dim if missing else 0), dtype=np.float32), 0
    return np.ascontiguousarray(np.vstack(found), dtype=np.float32), len(missing)


def cache_location(cache) -> str:
    """Where a cache (or the first writable layer of a layered one) writes."""
    for layer in [cache, *(getattr(cache, "writable", ()) or ())]:
        if getattr(layer, "path", None):
            return str(layer.path)
    return "the embedding cache"


def forget_caches() -> None:
    """Drop the in-memory embedding caches (the files stay): the next use re-reads disk."""
    with _CACHES_LOCK:
        _CACHES.clear()
