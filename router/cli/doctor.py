"""`toolsift doctor`: what is installed, where the catalog, its index and the caches are, and
whether the index is stale. Nothing is loaded or changed: package versions come from the
installed metadata, the catalog is opened read-only.

Exit 0 when every check passes or only warns, 1 when one fails (no catalog, an unreadable index).
"""
from __future__ import annotations

import os
import platform
import sys
import time
from importlib.metadata import PackageNotFoundError, version

import typer

from .options import Db, IndexDir, Json, catalog_path
from .output import print_json, say, wants_json

# What toolsift runs on, and what each one is for (shown when it is missing).
PACKAGES = (("onnxruntime", "query and index encoding"), ("tokenizers", "query and index encoding"),
            ("faiss-cpu", "dense index"),
            ("bm25s", "BM25 index builds"), ("tree-sitter", "checking code-style calls"),
            ("fastapi", "serve openai"), ("mcp", "serve mcp"), ("rich", "tables and progress bars"))
# Extras: their absence is the run-time install as intended, not a finding.
OPTIONAL = (("torch", "train", "tune, --encoder torch, converting a tuned folder"),
            ("sentence-transformers", "train", "the torch reference encoder"),
            ("ranx", "bench", "toolsift bench"))


def _version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _check(name: str, status: str, detail: str) -> dict[str, str]:
    return {"check": name, "status": status, "detail": detail}


def _catalog_checks(db, index_dir) -> list[dict[str, str]]:
    from apidb.catalog import Catalog
    from apidb.location import catalog_exists
    from apidb.errors import ToolsiftError

    checks = []
    source = "--db" if db else "$TOOLSIFT_DB" if os.environ.get("TOOLSIFT_DB") else "default"
    path = catalog_path(db)
    if not catalog_exists(path):
        return [_check("catalog", "fail", f"{path} ({source}) does not exist: `toolsift catalog add FILE` creates it")]
    try:
        with Catalog.open(path, readonly=True) as cat:
            stats = cat.stats()
    except ToolsiftError as exc:
        return [_check("catalog", "fail", f"{path}: {exc}")]
    checks.append(_check("catalog", "ok", f"{path} ({source}): {stats['records']} records, "
                                          f"{len(stats['namespaces'])} namespace(s)"))
    from router.index.build import index_status

    try:
        st = index_status(path, index_dir=index_dir)
    except ToolsiftError as exc:
        return checks + [_check("index", "fail", str(exc))]
    if not st["exists"]:
        checks.append(_check("index", "warn", f"{st['path']}: none; `toolsift index --db {path}` builds it "
                                              "(routing works without it, BM25 only)"))
    elif st.get("error"):
        checks.append(_check("index", "fail", f"{st['path']}: {st['error']}"))
    else:
        age = time.time() - float(st.get("built") or time.time())
        detail = (f"{st['path']}: {st['records']} records, model {st['model']}, encoder {st['encoder']}, "
                  f"built {_age(age)}")
        # the command to run, with the catalog and index folder this doctor was given
        again = "toolsift index" + (f" --db {path}" if db or os.environ.get("TOOLSIFT_DB") else "") + \
            (f" --index-dir {index_dir}" if index_dir else "")
        checks.append(_check("index", "warn" if st["stale"] else "ok",
                             detail + (f"; STALE: the catalog changed since, run `{again}`" if st["stale"] else "")))
    return checks


def _age(seconds: float) -> str:
    """'just now', '12 min ago', '3.5 h ago', '4 days ago' ('built 0.0 h ago' read as broken)."""
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min ago"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h ago"
    return f"{seconds / 86400:.0f} days ago"


def doctor(db: Db = None, index_dir: IndexDir = None, as_json: Json = False) -> None:
    """Check the installation, the catalog and its index, and the caches."""
    from router.encoders.dense import default_cache_dir, resolve_encoder

    checks = [_check("toolsift", "ok", f"{_version('toolsift') or 'not installed'} (Python "
                                       f"{platform.python_version()}, {sys.executable})")]
    for name, why in PACKAGES:
        v = _version(name)
        checks.append(_check(name, "ok" if v else "warn", v or f"not installed: needed for {why}"))
    checks += _catalog_checks(db, index_dir)
    cache = default_cache_dir()
    files = list(cache.glob("emb-*.npz")) if cache.is_dir() else []
    size = sum(f.stat().st_size for f in files)
    where = "$TOOLSIFT_CACHE" if os.environ.get("TOOLSIFT_CACHE") else "default; $TOOLSIFT_CACHE moves it"
    checks.append(_check("embedding cache", "ok", f"{cache} ({where}): {len(files)} model file(s), "
                                                  f"{size / 1e6:.1f} MB (`toolsift cache info`)"))
    try:
        enc = resolve_encoder(None)
        checks.append(_check("encoder", "ok", f"{enc} ($TOOLSIFT_ENCODER)" if os.environ.get("TOOLSIFT_ENCODER")
                             else f"{enc} (default; $TOOLSIFT_ENCODER chooses)"))
    except Exception as exc:  # noqa: BLE001 - a bad $TOOLSIFT_ENCODER is a finding, not a crash
        checks.append(_check("encoder", "fail", str(exc)))
    for name, extra, why in OPTIONAL:
        v = _version(name)
        checks.append(_check(name, "ok", v or f"not installed (optional, for {why}: pip install 'toolsift[{extra}]')"))
    from router.encoders.shipped import SHIPPED_DIR, shipped_graph

    graph = shipped_graph()
    checks.append(_check("default encoder", "ok" if graph else "warn",
                         f"{graph} (ready for ONNX Runtime)" if graph else
                         f"{SHIPPED_DIR} holds no graph of the installed delta: the first use converts it "
                         "(training extra)"))
    offline = os.environ.get("HF_HUB_OFFLINE") == "1"
    checks.append(_check("HF_HUB_OFFLINE", "ok" if offline else "warn",
                         "1: models load from the local cache only" if offline else
                         "not set: a missing model may be downloaded"))
    from apidb.urls import redact_text

    for c in checks:  # a --db or $TOOLSIFT_DB URL is shown, never its password (apidb.urls)
        c["detail"] = redact_text(c["detail"])
    failed = [c for c in checks if c["status"] == "fail"]
    if wants_json(as_json):
        print_json({"ok": not failed, "checks": checks})
    else:
        for c in checks:
            say(f"{c['status']:<4}  {c['check']:<22} {c['detail']}", wrap=True, indent=" " * 29)
    if failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
