"""The persisted index next to a catalog: BM25 + faiss files and the embedding cache.

Layout of ``<catalog>.index/``::

    manifest.json        which build is current; catalog generation, model id, record hashes
    build-<token>/       ids.json, bm25/ (bm25s files), dense.faiss
    cache/emb-*.npz      embeddings by content hash (survives rebuilds)

A build writes a new ``build-<token>/`` directory, then replaces ``manifest.json``
atomically (temp file + ``os.replace``), then deletes older builds. A killed build
therefore leaves the previous manifest and build in place and usable.

Integrity (integrity.py): the manifest holds the sha256 of every file of its build, checked
at load. A file that fails its checksum (a flipped bit changes faiss' top 5 silently) is treated
as missing: BM25 rebuilt in memory, dense vectors from the embedding cache (a zip whose
members carry CRCs) or dense search off, each with a warning. Every file and folder of
the index takes the catalog file's permissions, so whoever may read the catalog may read
its index (a 0600 manifest made other users of a shared catalog route keyword-only).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from apidb.catalog import Catalog, is_server_url
from apidb.errors import CatalogError
from apidb.location import default_db_path
from apidb.record import ApiRecord

from .. import text as rtext
from ..encoders.dense import BASE_MODEL, DEFAULT_MODEL, Embedder, embed_with_cache, model_identity, resolve_encoder, vector_space
from ..errors import RouterError
from .integrity import _checksums, _distrust, _failing
from .lexical import LexicalIndex
from .vector_index import DenseIndex
from .stored import catalog_digest, store_index, stored_status
from .vector_store import vector_cache

FORMAT = 1
MANIFEST = "manifest.json"
_BUILD_NAME = re.compile(r"build-[0-9a-f]{12}")


def index_dir_for(db_path: str | os.PathLike[str]) -> Path:
    return Path(str(db_path) + ".index")


def _digest(records: list[ApiRecord]) -> str:
    h = hashlib.sha256()
    for r in records:
        h.update(f"{r.id}\0{r.content_hash}\0{rtext.embedding_key(r)}\n".encode())
    return h.hexdigest()


@dataclass
class IndexReport:
    path: str
    records: int
    embedded: int          # records encoded by the model in this build (0 when all cached)
    reused: int            # records whose vectors came from the cache
    seconds: float
    up_to_date: bool = False
    # what the catalog itself now stores for replicas (router.index.stored): "stored", "current",
    # or why not (a catalog file this user may not write)
    catalog_store: str = "stored"

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class LoadedIndex:
    records: list[ApiRecord]
    lexical: LexicalIndex
    dense: DenseIndex | None
    model_id: str
    cache_dir: Path
    warnings: list[str] = field(default_factory=list)
    encoder: str | None = None  # the encoder whose vector space the dense index is in


def _read_manifest(index_dir: Path) -> dict:
    path = index_dir / MANIFEST
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("format") != FORMAT or "build" not in data:
        raise ValueError("not a toolsift index manifest of this version")
    if not isinstance(data["build"], str) or not _BUILD_NAME.fullmatch(data["build"]):
        raise ValueError(f"build {str(data['build'])[:40]!r} is not a build folder name")
    return data


def _modes_of(db: Path) -> tuple[int, int] | None:
    """(file mode, folder mode) for an index that may be read by whoever may read the
    catalog: the catalog's read/write bits (the owner keeps read/write), folders +x where
    readable. None if the catalog cannot be stat'ed."""
    try:
        mode = (stat.S_IMODE(os.stat(db).st_mode) & 0o666) | 0o600
    except OSError:
        return None
    return mode, mode | ((mode & 0o444) >> 2)


def _share_like_catalog(idir: Path, db: Path) -> None:
    """Every file and folder of the index gets the catalog's permissions. Best effort: a
    file another user owns keeps its own."""
    modes = _modes_of(db)
    if modes is None:
        return
    for path in [idir, *idir.rglob("*")]:
        try:
            os.chmod(path, modes[1] if path.is_dir() else modes[0])
        except OSError:
            continue


_catalog_digest = catalog_digest  # (router.index.stored; its stored snapshots are keyed on it too)


def _catalog_records(db_path: Path) -> tuple[list[ApiRecord], int, str]:
    """The records in id order, the catalog generation and its `_catalog_digest`."""
    import gc

    with Catalog.open(db_path, readonly=True) as cat:  # routing never writes the catalog
        gc.disable()  # 20k records allocate ~1M objects: the collector's passes cost ~40% of the load
        try:
            records = sorted(cat.records(), key=lambda r: r.id)
        finally:
            gc.enable()
        return records, cat.generation, _catalog_digest(cat.hashes())


def build_index(db_path: str | os.PathLike[str] | None = None, *, index_dir: str | os.PathLike[str] | None = None,
                model: str | None = None, field_weights: dict[str, int] | None = None,
                on_start: Callable[[int], None] | None = None,
                on_batch: Callable[[int], None] | None = None, encoder: str | None = None) -> IndexReport:
    """Build (or refresh) the indexes of a catalog; only records whose content hash has
    no cached vector are encoded. ``on_start(n_to_encode)`` and ``on_batch(n)`` report progress.
    ``encoder`` None reads $TOOLSIFT_ENCODER (see router.encoders.dense); the manifest records it."""
    t0 = time.perf_counter()
    location = db_path or default_db_path()
    if is_server_url(location):  # a server's catalog keeps everything itself: no index folder
        return _build_in_catalog(str(location), model, encoder, field_weights, on_start, on_batch, t0)
    db = Path(location)
    records, generation, catalog_digest = _catalog_records(db)
    if not records:
        raise RouterError(f"{db}: the catalog is empty; add records with `toolsift catalog add` first")
    idir = Path(index_dir) if index_dir else index_dir_for(db)
    model_id = model or DEFAULT_MODEL
    weights = field_weights or dict(rtext.DEFAULT_FIELD_WEIGHTS)
    digest = _digest(records)
    try:
        old = _read_manifest(idir)
    except Exception:
        old = None
    identity = model_identity(model_id)
    encoder = resolve_encoder(encoder)
    if old and old.get("digest") == digest and old.get("model") == model_id \
            and old.get("model_identity", identity) == identity \
            and old.get("vectors", "fp32") == vector_space(encoder) \
            and old.get("field_weights") == weights and (idir / old["build"]).is_dir() \
            and _failing(idir / old["build"], old) == set():  # a damaged build is rebuilt
        if old.get("catalog_digest") != catalog_digest:  # built by an older toolsift, or text.py edited
            _write_manifest(idir, {**old, "catalog_digest": catalog_digest}, db)
        _share_like_catalog(idir, db)
        stored = _store_in_catalog(db, model_id, encoder, weights, None, idir, catalog_digest)
        return IndexReport(str(idir), len(records), 0, len(records), time.perf_counter() - t0, True, stored)

    embedder = Embedder(model_id, encoder)
    # this index's cache, then the user-level one shared by every catalog, then shipped vectors
    cache = vector_cache(model_id, encoder, index_cache=idir / "cache")
    hashes = [rtext.embedding_key(r) for r in records]
    missing = sum(v is None for v in cache.get_many(hashes))
    if on_start:
        on_start(missing)
    vecs, embedded = embed_with_cache(embedder, cache, hashes, lambda i: rtext.record_passage(records[i]),
                                      on_batch=on_batch)
    cache.save()  # vectors found in a later layer (user cache, shipped) are now in the index's own cache

    idir.mkdir(parents=True, exist_ok=True)
    build = f"build-{uuid.uuid4().hex[:12]}"
    bdir = idir / build
    bdir.mkdir()
    tokens = rtext.batch_tokens(records, weights)
    LexicalIndex.build(tokens).save(bdir / "bm25")
    dense = DenseIndex(vecs)
    dense.write(bdir / "dense.faiss")
    content = [r.content_hash for r in records]  # a canonical JSON dump each: computed once here
    (bdir / "ids.json").write_text(json.dumps([[r.id, h] for r, h in zip(records, content)]), encoding="utf-8")
    manifest = {"format": FORMAT, "build": build, "generation": generation, "model": model_id,
                "model_identity": identity, "encoder": embedder.backend, "vectors": vector_space(encoder),
                "dense_index": dense.describe(),
                "dim": int(vecs.shape[1]), "records": len(records), "digest": digest,
                "catalog_digest": catalog_digest, "field_weights": weights, "created": time.time(),
                "files": _checksums(bdir)}
    _share_like_catalog(idir, db)  # before the manifest makes the build current
    _write_manifest(idir, manifest, db)
    for stale in idir.glob("build-*"):  # older builds and leftovers of killed builds
        if stale.name != build:
            shutil.rmtree(stale, ignore_errors=True)
    stored = _store_in_catalog(db, model_id, encoder, weights, dense, idir, catalog_digest,
                               dict(zip(content, tokens)))
    return IndexReport(str(idir), len(records), embedded, len(records) - embedded, time.perf_counter() - t0,
                       catalog_store=stored)


def _store_in_catalog(db: Path, model_id: str, encoder: str, weights: dict, dense: DenseIndex | None, idir: Path,
                      digest: str, tokens: dict[str, list[str]] | None = None) -> str:
    """Vectors and snapshots into the catalog file too, for routers that watch it (router.ranking.watch):
    the vectors come from the index's cache, nothing is embedded again. A file this user may
    read but not write keeps its index folder only, and the report says so."""
    try:
        with Catalog(db, create=False) as cat:
            report = store_index(cat, model=model_id, encoder=encoder, field_weights=weights, dense=dense,
                                 index_cache=idir / "cache", digest=digest, tokens=tokens)
    except CatalogError as exc:
        return f"not stored in the catalog ({exc})"
    return "current" if report.up_to_date else "stored"


def _build_in_catalog(url: str, model: str | None, encoder: str | None, weights: dict | None,
                      on_start: Callable[[int], None] | None, on_batch: Callable[[int], None] | None,
                      t0: float) -> IndexReport:
    with Catalog(url, create=False) as cat:
        if not len(cat):
            raise RouterError(f"{cat.path}: the catalog is empty; add records with `toolsift catalog add` first")
        report = store_index(cat, model=model, encoder=encoder, field_weights=weights, on_start=on_start,
                             on_batch=on_batch)
        where = str(cat.path)
    return IndexReport(where, report.records, report.embedded, report.reused, time.perf_counter() - t0,
                       report.up_to_date, "current" if report.up_to_date else "stored")


def _write_manifest(idir: Path, manifest: dict, db: Path) -> None:
    """Replace the manifest atomically (temp file + rename), with the catalog's permissions."""
    fd, tmp = tempfile.mkstemp(dir=idir, prefix=".manifest-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            os.fchmod(fd, (_modes_of(db) or (0o600, 0))[0])  # mkstemp makes it 0600
            json.dump(manifest, fh, indent=1)
        os.replace(tmp, idir / MANIFEST)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def load_index(db_path: str | os.PathLike[str] | None = None, *, index_dir: str | os.PathLike[str] | None = None,
               model: str | None = None, config=None, encoder: str | None = None,
               with_dense: bool = True) -> LoadedIndex:
    """Catalog records plus whatever of the persisted index is usable, with warnings for
    each fallback (BM25 rebuilt in memory; dense search off when no vectors are usable).
    ``with_dense=False``: BM25 only (a `route --method bm25` reads and checks no dense file).
    The dense index is used only if its vectors are in ``encoder``'s vector space."""
    db = Path(db_path) if db_path else default_db_path()
    records, generation, catalog_digest = _catalog_records(db)
    if not records:
        raise RouterError(f"{db}: the catalog is empty; nothing to route over")
    idir = Path(index_dir) if index_dir else index_dir_for(db)
    weights = (config.field_weights if config is not None else None) or dict(rtext.DEFAULT_FIELD_WEIGHTS)
    rebuild = f"run `toolsift index --db {db}` to build it"
    warnings: list[str] = []
    try:
        manifest = _read_manifest(idir)
    except FileNotFoundError:
        warnings.append(f"no index at {idir}: BM25 built in memory, dense search off ({rebuild})")
        return LoadedIndex(records, LexicalIndex.build(rtext.batch_tokens(records, weights)), None,
                           model or DEFAULT_MODEL, idir / "cache", warnings)
    except Exception as exc:
        warnings.append(f"index manifest {idir / MANIFEST} is unreadable ({exc}): BM25 built in memory, "
                        f"dense search off ({rebuild})")
        return LoadedIndex(records, LexicalIndex.build(rtext.batch_tokens(records, weights)), None,
                           model or DEFAULT_MODEL, idir / "cache", warnings)
    model_id = manifest.get("model", BASE_MODEL)  # a manifest without one predates the general encoder
    if model and model != model_id:
        raise RouterError(f"the index at {idir} was built with model {model_id!r}, not {model!r}; "
                          f"run `toolsift index --db {db} --model {model}` or omit --model")
    bdir = idir / manifest["build"]
    # the cheap digest first; the full one only for manifests without it or a changed catalog
    same_records = manifest.get("catalog_digest") == catalog_digest or manifest.get("digest") == _digest(records)
    identity = model_identity(model_id)
    encoder = resolve_encoder(encoder)
    same_model = manifest.get("model_identity", identity) == identity
    same_space = manifest.get("vectors", "fp32") == vector_space(encoder)
    fresh = same_records and manifest.get("field_weights") == weights
    # files are used only after their checksums match the manifest
    failing = (_failing(bdir, manifest, ("",) if with_dense else ("bm25/",))
               if fresh or (same_records and same_model) else set())
    lexical = None
    if fresh:
        try:
            if why := _distrust(failing, "bm25/"):
                raise RouterError(f"{bdir / 'bm25'}: {why}")
            lexical = LexicalIndex.load(bdir / "bm25")
            if lexical.n_docs != len(records):
                raise RouterError(f"{bdir / 'bm25'}: holds {lexical.n_docs} documents, catalog has {len(records)}")
        except RouterError as exc:
            warnings.append(f"{exc}; BM25 rebuilt in memory ({rebuild.replace('build', 'rebuild')})")
            lexical = None
    elif not same_records:
        what = (f"the catalog changed since the index was built (generation {manifest.get('generation')} → "
                f"{generation})" if manifest.get("generation") != generation else
                "the index was built from other record passages (an older toolsift)")
        warnings.append(f"{what}; using cached vectors where possible (run `toolsift index --db {db}` to refresh)")
    else:
        warnings.append(f"the index was built with other BM25 field weights; BM25 rebuilt in memory "
                        f"(run `toolsift index --db {db}` to refresh)")
    if lexical is None:
        lexical = LexicalIndex.build(rtext.batch_tokens(records, weights))
    if not with_dense:  # BM25 only was asked for: faiss is not even imported
        return LoadedIndex(records, lexical, None, model_id, idir / "cache", warnings, encoder)
    if not same_model:
        warnings.append(f"the model folder {model_id} changed since the index was built (tuned again?)")
    elif not same_space:
        warnings.append(f"the index holds {manifest.get('vectors', 'fp32')} vectors (encoder "
                        f"{manifest.get('encoder', 'torch')}); encoder {encoder} makes {vector_space(encoder)} vectors")
    dense = _load_dense(bdir, idir, records, model_id, same_records and same_model and same_space, warnings,
                        rebuild, encoder,
                        _distrust(failing, "dense.faiss") if same_records and same_model and same_space else None)
    return LoadedIndex(records, lexical, dense, model_id, idir / "cache", warnings, encoder)


def _load_dense(bdir: Path, idir: Path, records: list[ApiRecord], model_id: str, fresh: bool,
                warnings: list[str], rebuild: str, encoder: str, untrusted: str | None) -> DenseIndex | None:
    if fresh:
        try:
            if untrusted:
                raise RouterError(f"{bdir / 'dense.faiss'}: {untrusted}")
            return DenseIndex.read(bdir / "dense.faiss", len(records))
        except RouterError as exc:
            reason = str(exc)
    else:
        reason = "the dense index is stale"
    cache = vector_cache(model_id, encoder, index_cache=idir / "cache")
    vecs = cache.get_many([rtext.embedding_key(r) for r in records])
    if all(v is not None for v in vecs):
        import numpy as np

        if fresh:
            warnings.append(f"{reason}; dense index rebuilt from the embedding cache")
        return DenseIndex(np.vstack(vecs))
    missing = sum(v is None for v in vecs)
    warnings.append(f"{reason} and {missing} record(s) have no cached vector: dense search off, "
                    f"BM25 only ({rebuild.replace('build', 'rebuild')})")
    return None


def index_status(db_path: str | os.PathLike[str] | None = None, *,
                 index_dir: str | os.PathLike[str] | None = None) -> dict:
    """What `toolsift doctor` reports about a catalog's index: where it is, whether it exists, what
    built it, and whether it is stale (the catalog or the text rules changed since)."""
    location = db_path or default_db_path()
    if is_server_url(location):
        return stored_status(str(location))
    db = Path(location)
    idir = Path(index_dir) if index_dir else index_dir_for(db)
    status: dict = {"path": str(idir), "exists": False}
    try:
        manifest = _read_manifest(idir)
    except FileNotFoundError:
        return status
    except (OSError, ValueError) as exc:
        return {**status, "exists": True, "error": f"manifest unreadable ({type(exc).__name__}: {exc})"[:200]}
    records, _, catalog_digest = _catalog_records(db)
    stale = not (manifest.get("catalog_digest") == catalog_digest or manifest.get("digest") == _digest(records))
    return {**status, "exists": True, "records": manifest.get("records"), "model": manifest.get("model"),
            "encoder": manifest.get("encoder"), "vectors": manifest.get("vectors", "fp32"),
            "built": manifest.get("created"), "stale": stale}

