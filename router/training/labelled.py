"""Labelled queries against a catalog: what `toolsift tune` trains on (and the retrieval benchmark
scores on a user's own catalog).

Each line of the queries file is ``{"id": str, "query": str, "relevant": [tool, ...]}`` (or
``"messages": [...]`` instead of ``"query"``, turned into a query the way `Router.select` builds
one from a conversation). A tool is a catalog record id (``namespace/name``) or a tool name
that is unique in the catalog; ``relevant`` may also be one string. Every line must name at
least one tool the catalog holds: a label that names nothing would silently count as a miss,
so it is an error.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apidb.catalog import Catalog, is_server_url
from apidb.location import catalog_location
from apidb.errors import CatalogError
from apidb.jsonl import JsonLineError, TextFileError, parse_lines, read_utf8
from apidb.record import ApiRecord

from ..errors import RouterError
from ..ranking.query import build_query
from .usage_log import LogExamples, examples


@dataclass(frozen=True)
class LabelledQuery:
    id: str
    text: str
    relevant: frozenset[str]  # record ids
    line: int


@dataclass(frozen=True)
class LabelledSet:
    """Every record of a catalog, and the queries labelled against it."""

    records: list[ApiRecord]
    queries: list[LabelledQuery]
    db: Path | str  # a file, or a PostgreSQL URL
    path: Path


def _catalog_records(db: str | Path) -> list[ApiRecord]:
    if not is_server_url(db) and not Path(db).is_file():  # a URL is opened (and said) by Catalog, not a path
        raise RouterError(f"{db}: no such catalog (build one with `toolsift catalog add ... --db {db}`)")
    try:
        with Catalog.open(db, readonly=True) as cat:
            records = cat.records()
    except CatalogError as exc:
        raise RouterError(str(exc)) from None
    if not records:
        raise RouterError(f"{db}: the catalog is empty")
    return records


def load_usage_log(db: str | Path, logs: list[Path]) -> tuple[LabelledSet, LogExamples]:
    """The labelled queries a usage log teaches (router.training.usage_log), against catalog ``db``."""
    db = catalog_location(db)
    records = _catalog_records(db)
    found = examples(logs, records)
    queries = [LabelledQuery(qid, text, frozenset(rel), n) for n, (qid, text, rel) in enumerate(found.queries, 1)]
    if not queries:
        raise RouterError(f"{logs[0]}: nothing to train on ({found.summary()})")
    return LabelledSet(records, queries, db, Path(logs[0])), found


def load_labelled(db: str | Path, queries: str | Path, *, records: list[ApiRecord] | None = None) -> LabelledSet:
    """Read catalog ``db`` and the labelled ``queries`` file; RouterError names file, line and field.
    With ``records`` (e.g. a registry of Python functions), those are the catalog and ``db`` only names them."""
    db, qpath = catalog_location(db), Path(queries)
    records = _catalog_records(db) if records is None else records
    resolve = _resolver(records)
    try:
        out = [_query(qpath, n, row, resolve) for n, row in parse_lines(
            read_utf8(qpath, "the queries file", regular_only=True), strict_unicode=True)]
    except TextFileError as exc:
        raise RouterError(str(exc)) from None
    except JsonLineError as exc:
        raise RouterError(f"{qpath}: line {exc.lineno}: not JSON ({exc.msg})") from None
    if not out:
        raise RouterError(f"{qpath}: no queries")
    seen: set[str] = set()
    for q in out:
        if q.id in seen:
            raise RouterError(f"{qpath}: query id {q.id!r} is used twice")
        seen.add(q.id)
    return LabelledSet(records, out, db, qpath)


def _resolver(records: list[ApiRecord]) -> Callable[[str], tuple[str | None, str]]:
    ids = {r.id for r in records}
    by_name: dict[str, list[str]] = {}
    for r in records:
        by_name.setdefault(r.name, []).append(r.id)

    def resolve(label: str) -> tuple[str | None, str]:
        if label in ids:
            return label, ""
        hits = by_name.get(label, [])
        if len(hits) == 1:
            return hits[0], ""
        if hits:
            return None, f"{label!r} names {len(hits)} tools; use a record id ({', '.join(sorted(hits)[:3])}, ...)"
        return None, f"{label!r} is not a record id or tool name in the catalog"

    return resolve


def _query(path: Path, n: int, row: Any, resolve: Callable[[str], tuple[str | None, str]]) -> LabelledQuery:
    where = f"{path}: line {n}"
    if not isinstance(row, dict):
        raise RouterError(f"{where}: expected an object, got {type(row).__name__}")
    text = _text(where, row)
    labels = row.get("relevant")
    labels = [labels] if isinstance(labels, str) else labels
    if not isinstance(labels, list) or not labels or not all(isinstance(x, str) and x for x in labels):
        raise RouterError(f"{where}: field 'relevant' must be a tool id or name, or a non-empty list of them")
    relevant = set()
    for label in labels:
        rid, why = resolve(label)
        if rid is None:
            raise RouterError(f"{where}: field 'relevant': {why}")
        relevant.add(rid)
    return LabelledQuery(str(row.get("id", str(n))), text, frozenset(relevant), n)


def _text(where: str, row: dict[str, Any]) -> str:
    if isinstance(row.get("query"), str) and row["query"].strip():
        return row["query"]
    if "messages" in row:
        if not isinstance(row["messages"], list):
            raise RouterError(f"{where}: field 'messages' must be a list of messages")
        try:
            return build_query(row["messages"])
        except RouterError as exc:
            raise RouterError(f"{where}: field 'messages': {exc}") from None
    raise RouterError(f"{where}: needs a non-empty 'query' string or a 'messages' list")
