"""`toolsift cache info|clear`: the user-level embedding cache every command shares.

    toolsift cache info [--json]        where it is ($TOOLSIFT_CACHE), each model's file, vectors, size
    toolsift cache clear [--yes]        delete the cached embeddings (ONNX exports are kept)

Vectors are keyed by (model fingerprint, passage hash) (router.index.vector_store), so one tool in two
catalogs is embedded once, and `toolsift index`, `route`, `bench`, `tune` and `demo` all reuse it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from .errors import CliError
from .options import Db, Json, Model, catalog_path
from .output import print_json, say, show, table, wants_json


def _cache_files(root: Path) -> list[dict[str, Any]]:
    import numpy as np

    out = []
    for path in sorted(root.glob("emb-*.npz")):
        entry: dict[str, Any] = {"file": str(path), "bytes": path.stat().st_size, "model": None, "vectors": None}
        try:
            with np.load(path, allow_pickle=False) as z:
                entry["model"], entry["vectors"] = str(z["model"]), int(z["keys"].shape[0])
        except Exception as exc:  # noqa: BLE001 - a damaged cache file is reported, not fatal
            entry["error"] = f"unreadable ({type(exc).__name__})"
        out.append(entry)
    return out


def _shipped() -> list[dict[str, Any]]:
    from router.index.vector_store import BUNDLED_DIR, BUNDLED_SUFFIX, ShippedVectors

    out = []
    for path in sorted(BUNDLED_DIR.glob(f"*{BUNDLED_SUFFIX}")):
        try:
            v = ShippedVectors(path)
            out.append({"file": str(path), "bytes": path.stat().st_size, "model": v.identity, "vectors": len(v)})
        except Exception as exc:  # noqa: BLE001
            out.append({"file": str(path), "error": f"unreadable ({type(exc).__name__})"})
    return out


def info(as_json: Json = False) -> None:
    """Where the shared embedding cache is, and what it holds per model."""
    from router.index.vector_store import user_cache_dir

    root = user_cache_dir()
    files = _cache_files(root) if root.is_dir() else []
    data = {"cache_dir": str(root), "files": files, "vectors": sum(f["vectors"] or 0 for f in files),
            "bytes": sum(f["bytes"] for f in files), "shipped": _shipped()}
    if wants_json(as_json):
        print_json(data)
        return
    import os

    where = "$TOOLSIFT_CACHE" if os.environ.get("TOOLSIFT_CACHE") else "default; $TOOLSIFT_CACHE moves it"
    say(f"embedding cache: {root} ({where}){'' if root.is_dir() else ' (not created yet)'}", wrap=True)
    rows = [(f.get("model") or f.get("error"), f["vectors"] if f["vectors"] is not None else "-",
             f"{f['bytes'] / 1e6:.1f} MB", Path(f["file"]).name) for f in files]
    if rows:
        show(table(("model", "vectors", "size", "file"), rows, keep_whole=("file", "model"),
                   right=("vectors", "size")))
    say(f"{data['vectors']} vectors, {data['bytes'] / 1e6:.1f} MB")
    for s in data["shipped"]:
        say(f"shipped with toolsift: {s.get('vectors', '-')} vectors for {s.get('model') or s.get('error')} "
            f"({Path(s['file']).name})", wrap=True)


def clear(yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask."), as_json: Json = False) -> None:
    """Delete the cached embeddings of every model (they are computed again when needed)."""
    from router.encoders.dense import forget_caches
    from router.index.vector_store import user_cache_dir

    root = user_cache_dir()
    paths = sorted(root.glob("emb-*.npz")) + sorted(root.glob("emb-*.lock")) if root.is_dir() else []
    if paths and not yes and not typer.confirm(f"delete {len(paths)} cache file(s) in {root}?"):
        raise typer.Exit(1)
    freed = 0
    for p in paths:
        try:
            freed += p.stat().st_size
            p.unlink()
        except OSError as exc:
            raise CliError(f"{p}: cannot delete ({exc.strerror or exc})") from None
    forget_caches()
    if wants_json(as_json):
        print_json({"cache_dir": str(root), "deleted": len(paths), "bytes": freed})
    else:
        say(f"deleted {len(paths)} file(s), {freed / 1e6:.1f} MB, from {root}")


def ship(db: Db = None, out: Path = typer.Option(..., "--out", help="the .vectors.npz file to write"),
         model: Model = None, encoder: Optional[str] = typer.Option(
             None, "--encoder", help="Which encoder embeds the passages: onnx (= onnx-int8, the default), onnx-fp32 or "
                                     "torch; default $TOOLSIFT_ENCODER, else onnx. The shipped files use the default.")) -> None:
    """(Maintainers) Write a catalog's vectors as a shipped float16 file (router/data)."""
    from apidb.catalog import Catalog
    from router import text as rtext
    from router.encoders.dense import (
        DEFAULT_MODEL,
        Embedder,
        cache_identity,
        embed_with_cache,
        resolve_encoder,
    )
    from router.index.vector_store import BUNDLED_SUFFIX, vector_cache, write_shipped

    if not out.name.endswith(BUNDLED_SUFFIX):
        raise CliError(f"--out must end with {BUNDLED_SUFFIX}")
    model_id, enc = model or DEFAULT_MODEL, resolve_encoder(encoder)
    with Catalog.open(catalog_path(db), readonly=True) as cat:
        records = sorted(cat.records(), key=lambda r: r.id)
    keys = list(dict.fromkeys(rtext.embedding_key(r) for r in records))
    first = {}
    for r in records:
        first.setdefault(rtext.embedding_key(r), r)
    vecs, embedded = embed_with_cache(Embedder(model_id, enc), vector_cache(model_id, enc), keys,
                                      lambda i: rtext.record_passage(first[keys[i]]))
    path = write_shipped(out, keys, vecs, cache_identity(model_id, enc))
    say(f"wrote {path}: {len(keys)} vectors ({embedded} embedded now), {path.stat().st_size / 1e6:.2f} MB")


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="The shared embedding cache ($TOOLSIFT_CACHE).", no_args_is_help=True)
    group.command("info")(info)
    group.command("clear")(clear)
    group.command("ship", hidden=True)(ship)
    app.add_typer(group, name="cache")
