"""Integrity of a built index: the sha256 of every file of a build, kept in its manifest
(build.py writes it), and which files no longer match it. A flipped bit in dense.faiss changes
faiss' top 5 silently, so a file that fails its checksum is never used: load_index falls back as
for a missing file, and build_index rebuilds a damaged build.
"""
from __future__ import annotations

import hashlib
from pathlib import Path


def _sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _checksums(bdir: Path) -> dict[str, str]:
    """sha256 of every file of a build, by path relative to the build folder."""
    return {p.relative_to(bdir).as_posix(): _sha256(p) for p in sorted(bdir.rglob("*")) if p.is_file()}


def _failing(bdir: Path, manifest: dict, prefixes: tuple[str, ...] = ("",)) -> set[str] | None:
    """Files of the build whose content does not match the manifest's checksum (or that
    are missing); None when the manifest has no checksums (built by an older toolsift).
    Only files under ``prefixes`` are read (a BM25-only load never hashes the dense files)."""
    files = manifest.get("files")
    if not isinstance(files, dict):
        return None
    bad = set()
    for rel, digest in files.items():
        if not str(rel).startswith(prefixes):
            continue
        path = bdir / str(rel)
        try:
            ok = path.resolve().is_relative_to(bdir.resolve()) and _sha256(path) == digest
        except OSError:
            ok = False
        if not ok:
            bad.add(str(rel))
    return bad


def _distrust(failing: set[str] | None, prefix: str) -> str | None:
    """Why the build's files under ``prefix`` must not be used (see `_failing`), or None."""
    if failing is None:
        return "has no checksums (built by an older toolsift)"
    bad = sorted(f for f in failing if f.startswith(prefix))
    return f"fails its checksum ({', '.join(bad)[:120]} damaged or changed since the build)" if bad else None
