"""Your own catalog and labelled queries as a benchmark dataset.

    toolsift bench retrieval --db catalog.db --queries labelled.jsonl
    toolsift bench retrieval --tools my_agent.tools:TOOLS --queries labelled.jsonl

The file format and its checks are the product's (`router.training.labelled`, shared with
`toolsift tune`); this module only turns the result into a benchmark `Dataset`.
"""
from __future__ import annotations

from pathlib import Path

from apidb.urls import redact_url
from router.errors import RouterError
from router.training.labelled import load_labelled

from .datasets import Dataset, Query
from ..errors import DatasetError


def load_custom(db: str | Path, queries: str | Path, name: str | None = None) -> Dataset:
    """A `Dataset` over every record of catalog ``db`` with the labelled queries of ``queries``."""
    try:
        data = load_labelled(db, queries)
    except RouterError as exc:
        raise DatasetError(str(exc)) from None
    out = [Query(q.id, q.text, set(q.relevant), {"line": q.line}) for q in data.queries]
    return Dataset(name or f"custom:{data.path.stem}", data.records, out,
                   notes=[f"your catalog {redact_url(str(data.db))} ({len(data.records):,} tools) and {len(out):,} labelled queries "
                          f"from {data.path}"])


def load_python_tools(spec: str, queries: str | Path, name: str | None = None) -> Dataset:
    """A `Dataset` over the tools ``spec`` names (``MODULE:ATTRIBUTE``: Python functions or framework
    tool objects, router.frameworks) with the labelled queries of ``queries``."""
    from router.frameworks import FrameworkError, load_registry

    try:
        registry = load_registry(spec)
        data = load_labelled(spec, queries, records=registry.records)
    except (FrameworkError, RouterError) as exc:
        raise DatasetError(str(exc)) from None
    out = [Query(q.id, q.text, set(q.relevant), {"line": q.line}) for q in data.queries]
    return Dataset(name or f"python:{data.path.stem}", data.records, out,
                   notes=[f"your tools {spec} ({len(data.records):,} tools) and {len(out):,} labelled queries "
                          f"from {data.path}"])
