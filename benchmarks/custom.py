"""Your own catalog and labelled queries as a benchmark dataset.

    toolsift bench retrieval --db catalog.db --queries labelled.jsonl

Each line of the queries file is ``{"id": str, "query": str, "relevant": [tool, ...]}`` (or
``"messages": [...]`` instead of ``"query"``, routed the way `Router.select` builds a query from a
conversation). A tool is a catalog record id (``namespace/name``) or a tool name that is unique
in the catalog; ``relevant`` may also be one string. Every line must name at least one tool the
catalog holds: a label that names nothing would silently count as a miss, so it is an error.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from apidb.jsonl import JsonLineError, TextFileError, parse_lines, read_utf8

from .datasets import Dataset, DatasetError, Query


def load_custom(db: str | Path, queries: str | Path, name: str | None = None) -> Dataset:
    """A `Dataset` over every record of catalog ``db`` with the labelled queries of ``queries``."""
    from apidb.catalog import Catalog
    from apidb.errors import CatalogError

    db, qpath = Path(db), Path(queries)
    if not db.is_file():
        raise DatasetError(f"{db}: no such catalog (build one with `toolsift catalog add ... --db {db}`)")
    try:
        with Catalog(db) as cat:
            records = cat.records()
    except CatalogError as exc:
        raise DatasetError(str(exc)) from None
    if not records:
        raise DatasetError(f"{db}: the catalog is empty")
    resolve = _resolver(records)
    try:
        out = [_query(qpath, n, row, resolve) for n, row in parse_lines(read_utf8(qpath, "the queries file"))]
    except TextFileError as exc:
        raise DatasetError(str(exc)) from None
    except JsonLineError as exc:
        raise DatasetError(f"{qpath}: line {exc.lineno}: not JSON ({exc.msg})") from None
    if not out:
        raise DatasetError(f"{qpath}: no queries")
    ids = [q.id for q in out]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise DatasetError(f"{qpath}: query id {dup!r} is used twice")
    return Dataset(name or f"custom:{qpath.stem}", records, out,
                   notes=[f"your catalog {db} ({len(records):,} tools) and {len(out):,} labelled queries from {qpath}"])


def _resolver(records: list[Any]):
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


def _query(path: Path, n: int, row: Any, resolve) -> Query:
    where = f"{path}: line {n}"
    if not isinstance(row, dict):
        raise DatasetError(f"{where}: expected an object, got {type(row).__name__}")
    text = _text(where, row)
    labels = row.get("relevant")
    labels = [labels] if isinstance(labels, str) else labels
    if not isinstance(labels, list) or not labels or not all(isinstance(x, str) and x for x in labels):
        raise DatasetError(f"{where}: field 'relevant' must be a tool id or name, or a non-empty list of them")
    relevant = set()
    for label in labels:
        rid, why = resolve(label)
        if rid is None:
            raise DatasetError(f"{where}: field 'relevant': {why}")
        relevant.add(rid)
    qid = row.get("id", str(n))
    return Query(str(qid), text, relevant, {"line": n})


def _text(where: str, row: dict) -> str:
    if isinstance(row.get("query"), str) and row["query"].strip():
        return row["query"]
    if "messages" in row:
        from router.errors import RouterError
        from router.query import build_query

        if not isinstance(row["messages"], list):
            raise DatasetError(f"{where}: field 'messages' must be a list of messages")
        try:
            return build_query(row["messages"])
        except RouterError as exc:
            raise DatasetError(f"{where}: field 'messages': {exc}") from None
    raise DatasetError(f"{where}: needs a non-empty 'query' string or a 'messages' list")
