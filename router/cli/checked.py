"""What `toolsift check` and `toolsift audit` share: the catalog they check against, the modes,
and when a run counts as failed (``--fail-on``, exit code 1).

``--db`` takes a catalog, or any source file the catalog loaders read (Gorilla mode needs the
*_api.jsonl file itself: its line order is part of the upstream scoring rules).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Optional

import typer

from apidb.errors import ToolsiftError

from .errors import CliError

_SOURCE_SUFFIXES = {".json", ".jsonl", ".yaml", ".yml"}

MODES = ("strict", "gorilla", "bfcl")  # gorilla: code-style answers only; bfcl: JSON calls only

# Every verdict a line can get (checker.verdict), plus the two the commands add themselves.
VERDICTS = ("correct", "valid", "wrong_api", "hallucinated", "unparsable", "hallucinated_tool",
            "hallucinated_param", "missing_required", "type_error", "enum_violation", "wrong_call",
            "error", "no_gold")

FAIL_ON_HELP = ("When to exit 1: 'any' defective answer (default: any verdict but correct/valid), "
                "'none' (always exit 0 when the input could be read), or a comma-separated list of "
                "verdicts, e.g. hallucinated,hallucinated_tool.")


def mode_of(mode: str) -> str:
    if mode not in MODES:
        raise CliError(f"unknown --mode {mode!r} (choose from: {', '.join(MODES)})")
    return mode


def fail_on(value: str) -> Optional[frozenset[str]]:
    """The verdicts that make the run fail; None means any defective (not ok) answer."""
    v = value.strip().lower()
    if v == "any":
        return None
    if v == "none":
        return frozenset()
    names = [x.strip() for x in v.split(",") if x.strip()]
    unknown = [x for x in names if x not in VERDICTS]
    if unknown or not names:
        raise CliError(f"--fail-on: unknown verdict {unknown[0] if unknown else value!r} "
                       f"(choose any, none, or from: {', '.join(VERDICTS)})")
    return frozenset(names)


def failed(rows: Iterable[dict[str, Any]], verdicts: Optional[frozenset[str]]) -> int:
    """How many rows fail under ``--fail-on``."""
    if verdicts is None:
        return sum(1 for r in rows if not r.get("ok", r.get("verdict") in ("correct", "valid")))
    return sum(1 for r in rows if r.get("verdict") in verdicts)


def exit_for(n_failed: int) -> None:
    """Exit 1 when answers failed (documented in docs/cli.md); return otherwise."""
    if n_failed:
        raise typer.Exit(1)


def bfcl_rows(file: Path, text: str, fc: bool, data: Optional[Path]) -> list[dict[str, Any]]:
    """--mode bfcl: every line checked first; a bad one is a one-line error naming it."""
    from checker.bfcl.batch import check_lines
    from checker.bfcl.data import BfclData

    lines = [(i, ln) for i, ln in enumerate(text.splitlines(), 1) if ln.strip()]
    try:
        return check_lines(lines, fc=fc, data=BfclData(data))
    except ToolsiftError as exc:
        raise CliError(f"{file}: {exc}") from None


def progress_bar(total: int):  # noqa: ANN201
    from rich.console import Console
    from rich.progress import Progress

    console = Console(stderr=True)
    return Progress(console=console, transient=True, disable=not console.is_terminal or total < 200)



class CheckCatalog:
    """The --db argument, opened on first use: a catalog file or any loadable source file."""

    def __init__(self, db: Optional[Path], namespace: Optional[str]) -> None:
        self.db, self.namespace = db, namespace
        self._records: Any = None
        self._index: Any = None
        self._failed: Optional[ToolsiftError] = None  # an open that failed is not retried per line


    @property
    def is_source(self) -> bool:
        return isinstance(self.db, Path) and self.db.suffix.lower() in _SOURCE_SUFFIXES

    def warn_order(self, mode: str) -> None:
        """Gorilla mode needs the API database's file order; a catalog may not keep it."""
        if mode == "gorilla" and not self.is_source:
            recs = self.records()
            if recs and not all("source_index" in r.metadata for r in recs):
                typer.echo("warning: this catalog does not record the source file order that upstream "
                           "scoring depends on; for upstream-exact Gorilla figures pass the *_api.jsonl "
                           "file itself as --db", err=True)

    def records(self) -> list:
        """The catalog's records, read once. A failed open is remembered and raised again: a
        PostgreSQL server that does not answer costs one connect timeout, not one per input line."""
        if self._failed is not None:
            raise self._failed
        if self._records is None:
            try:
                self._records = self._read()
            except ToolsiftError as exc:
                self._failed = exc
                raise
        return self._records

    def _read(self) -> list:
        if self.is_source:
            from apidb.loaders import load

            recs = load(self.db).records  # source order kept: Gorilla mode needs it
        else:
            from apidb.catalog import Catalog

            with Catalog.open(self.db, readonly=True) as cat:
                recs = cat.records()
        if self.namespace is not None:
            recs = [r for r in recs if r.namespace == self.namespace]
            if not recs:
                raise CliError(f"{self.db}: no records in namespace {self.namespace!r}")
        return recs

    def index(self) -> Any:
        if self._index is None:
            from checker.code import CodeIndex

            self._index = CodeIndex(self.records(), self.namespace)
        return self._index
