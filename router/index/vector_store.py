"""Where a passage's vector comes from before the model is asked: embeddings computed once.

Lookup order for one (model fingerprint, passage hash) key:

1. the index's own cache (``<catalog>.index/cache``), which lets an index rebuild its dense part
   after a damaged file without the model (router.index.build);
2. the user-level shared cache, ``$TOOLSIFT_CACHE`` (default ``~/.cache/toolsift``), one file per
   model and vector space, shared by every catalog and every command: `toolsift index`, `route`,
   `bench`, `tune`, `demo`;
3. vectors shipped with the package (``router/data/*.vectors.npz``, float16), for the bundled
   Gorilla catalog, used only when the file's model fingerprint is the encoder's;
4. the model (router.encoders.dense.embed_with_cache encodes what no layer has, and writes it to 1 and 2).

A catalog that stores vectors itself (apidb side) comes before all of these; this module does not
know about it. The keys are router.text.embedding_key (a hash of the passage the model reads), so
a tool that appears in two catalogs is embedded once, and a fingerprint mismatch (another model,
another precision, a re-tuned folder) never serves a wrong vector: it re-embeds.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from ..encoders.dense import EmbeddingCache, cache_identity, default_cache_dir, shared_cache

BUNDLED_DIR = Path(__file__).resolve().parents[1] / "data"
BUNDLED_SUFFIX = ".vectors.npz"


class ShippedVectors:
    """Read-only vectors from a ``.vectors.npz`` file: ``keys`` (passage hashes), ``vecs``
    (float16) and ``model`` (the `cache_identity` they were computed with)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        with np.load(self.path, allow_pickle=False) as z:
            self.identity = str(z["model"])
            keys, vecs = z["keys"].tolist(), z["vecs"]
        self._row = {k: i for i, k in enumerate(keys)}
        self._vecs = vecs

    def __len__(self) -> int:
        return len(self._row)

    def get_many(self, hashes: Iterable[str]) -> list[np.ndarray | None]:
        out: list[np.ndarray | None] = []
        for h in hashes:
            i = self._row.get(h)
            out.append(None if i is None else self._vecs[i].astype(np.float32))
        return out


_SHIPPED: dict[str, list[ShippedVectors]] = {}


def shipped_vectors(identity: str) -> list[ShippedVectors]:
    """The shipped vector files whose fingerprint is ``identity`` (read once per process).
    A file that cannot be read is skipped: it is only a shortcut."""
    if identity not in _SHIPPED:
        found = []
        for path in sorted(BUNDLED_DIR.glob(f"*{BUNDLED_SUFFIX}")):
            try:
                vectors = ShippedVectors(path)
            except Exception:  # noqa: BLE001 - a damaged shipped file means: embed instead
                continue
            if vectors.identity == identity:
                found.append(vectors)
        _SHIPPED[identity] = found
    return _SHIPPED[identity]


def user_cache_dir() -> Path:
    """The user-level cache of embeddings: ``$TOOLSIFT_CACHE``, else ``~/.cache/toolsift``."""
    return default_cache_dir()


class LayeredCache:
    """Several caches as one (the `EmbeddingCache` interface embed_with_cache uses): a key is
    read from the first layer that has it; new vectors are written to every writable layer,
    and a vector found in a later layer is copied into the earlier writable ones."""

    def __init__(self, writable: Sequence[EmbeddingCache], readonly: Sequence[ShippedVectors] = ()) -> None:
        self.writable = list(dict.fromkeys(writable))  # the same cache object once
        self.readonly = list(readonly)

    def __len__(self) -> int:
        return max([len(c) for c in self.writable] + [0])

    def get_many(self, hashes: Iterable[str]) -> list[np.ndarray | None]:
        keys = list(hashes)
        found: list[np.ndarray | None] = [None] * len(keys)
        for layer_no, layer in enumerate([*self.writable, *self.readonly]):
            todo = [i for i, v in enumerate(found) if v is None]
            if not todo:
                break
            got = layer.get_many(keys[i] for i in todo)
            hits = [(i, v) for i, v in zip(todo, got) if v is not None]
            for i, v in hits:
                found[i] = v
            if hits and layer_no > 0:  # copy forward: the next run finds it in the first layer
                for cache in self.writable[:layer_no]:
                    cache.put_many([keys[i] for i, _ in hits], np.vstack([v for _, v in hits]))
        return found

    def put_many(self, hashes: Sequence[str], vecs: np.ndarray) -> None:
        for cache in self.writable:
            cache.put_many(hashes, vecs)

    def save(self) -> None:
        for cache in self.writable:
            try:
                cache.save()
            except OSError:  # a read-only home or index folder: the vectors stay in memory
                continue


def vector_cache(model_id: str, encoder: str | None = None, index_cache: str | os.PathLike[str] | None = None,
                 user_dir: str | os.PathLike[str] | None = None) -> LayeredCache:
    """The cache a command embeds through: the index's own cache (if any), the user-level shared
    cache (``user_dir``, default $TOOLSIFT_CACHE), then the shipped vectors of this model."""
    layers = []
    if index_cache is not None:
        layers.append(shared_cache(index_cache, model_id, encoder))
    layers.append(shared_cache(user_dir if user_dir is not None else user_cache_dir(), model_id, encoder))
    return LayeredCache(layers, shipped_vectors(cache_identity(model_id, encoder)))


def write_shipped(path: Path, keys: Sequence[str], vecs: np.ndarray, identity: str) -> Path:
    """Write a shipped vector file (float16, compressed); see `ShippedVectors`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, keys=np.array(list(keys)), vecs=np.asarray(vecs, dtype=np.float16),
                        model=np.array(identity))
    return path
