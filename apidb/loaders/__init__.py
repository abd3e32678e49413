"""Turn catalog files of any supported format into `ApiRecord`s.

One module per format; each exposes ``FORMAT``, ``sniff(path, data) -> bool`` and
``parse(path, data, namespace, problems) -> list[ApiRecord]``. Detection tries the
formats in a fixed order (most specific shape first).
"""
from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from ..errors import LoadError
from ..safe_io import lone_surrogate
from .common import LoadResult, Problems, read_source

# Order matters for detection: the most specific shapes first.
FORMATS = ("gorilla", "bfcl", "toolbench", "openapi", "mcp", "openai")


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{name}")


def detect(path: Path, data: object) -> str:
    for name in FORMATS:
        try:
            mod = _module(name)
        except ModuleNotFoundError:
            continue
        if mod.sniff(path, data):
            return name
    if data in ([], {}) or (isinstance(data, dict) and data.get("tools") == []):
        raise LoadError(str(path), "holds no tools (an empty tool list): nothing to add")
    raise LoadError(str(path), f"not a known catalog format (tried: {', '.join(FORMATS)}); "
                    "pass --format to say which it is")


def load(path: str | Path, format: str | None = None, namespace: str | None = None,
         skip_invalid: bool = False) -> LoadResult:
    """Load one source file. Bad records raise `LoadError` unless ``skip_invalid``."""
    path = Path(path)
    if namespace is not None and (i := lone_surrogate(namespace)) is not None:
        # (a command-line argument that is not UTF-8 arrives with lone surrogates in it)
        raise LoadError(str(path), f"namespace {namespace!r} is not valid Unicode (a lone surrogate at "
                        f"character {i})", field="namespace")
    if format is not None and format not in FORMATS:
        raise LoadError(str(path), f"unknown format {format!r} (choose from: {', '.join(FORMATS)})")
    data = read_source(path)
    fmt = format or detect(path, data)
    problems = Problems(path, skip_invalid)
    records = _module(fmt).parse(path, data, namespace, problems)
    if not records and not problems.skipped:
        raise LoadError(str(path), f"no API records found for format {fmt!r}")
    return LoadResult(path=str(path), format=fmt, records=records, skipped=problems.skipped,
                      namespaces={r.namespace for r in records} | ({namespace} if namespace else set()))


__all__ = ["FORMATS", "LoadResult", "Problems", "detect", "load"]
