"""Co-use relations learned from the usage log: the tools called for one request go together.

The proxy and the gateway write one usage-log line per valid call (router.training.usage_log); the
lines of one request share its ``query_hmac`` (and its ``query`` when contents are logged). Every
request whose calls name two or more catalog tools adds one call set; apidb.relations.co_use_pairs
turns the sets into ``co_use`` relations, which `toolsift catalog relations --learn-from-log`
stores in the catalog for the router's companions stage (router.ranking.companions).

A line's tool is found as for `toolsift tune --from-log` (router.training.usage_log.CatalogNames); an
unknown or ambiguous name is counted and left out.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from apidb.record import ApiRecord
from apidb.relations import Relation, co_use_pairs

from .usage_log import CatalogNames, read_events

__all__ = ["CoUseReport", "learn_co_use"]


@dataclass
class CoUseReport:
    lines: int = 0
    requests: int = 0          # requests with two or more known tools called
    unknown: int = 0           # lines whose tool the catalog does not have (or has twice)
    relations: list[Relation] = field(default_factory=list)


def learn_co_use(paths: Iterable[str | os.PathLike[str]], records: Sequence[ApiRecord]) -> CoUseReport:
    names = CatalogNames(records)
    out = CoUseReport()
    calls: dict[tuple[str, str], set[str]] = {}
    for path in paths:
        for row in read_events(path):
            out.lines += 1
            hits = names.of(row)
            if len(hits) != 1:
                out.unknown += 1
                continue
            # one request = one routing query of one writer (tenant too: tenants never share sets)
            key = (str(row.get("tenant") or ""), str(row.get("query_hmac") or row.get("query_sha256")))
            calls.setdefault(key, set()).update(hits)
    sets = [s for s in calls.values() if len(s) > 1]
    out.requests = len(sets)
    out.relations = co_use_pairs(sets)
    return out
