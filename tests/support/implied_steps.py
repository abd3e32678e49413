"""A step the request implies (router.ranking.output_file, relative_time), routed with its part and
without: the checks both stages' tests make on real requests."""
from __future__ import annotations

from typing import Any, Callable, Iterable


def with_and_without(on: Any, off: Any, queries: Iterable[Any], applies: Callable[[str], bool],
                     tools: set[str]) -> tuple[int, int, int, list[tuple[Any, list[Any]]]]:
    """Each request routed (k=10, fixed) by ``on`` and ``off``, the same router with the step's part on
    and off: one the step does not apply to routes exactly alike, and one it applies to keeps its first
    five places. Returns how many it applies to, the gold ``tools`` in their top 10 off and on, and
    each such request with its selection by ``on``."""
    applied, gold_off, gold_on = [], 0, 0
    for q in queries:
        sel = on.select(q.text, k=10, adaptive=False)
        on_ids = [s.record.id for s in sel]
        off_ids = [s.record.id for s in off.select(q.text, k=10, adaptive=False)]
        if not applies(q.text):
            assert on_ids == off_ids, q.id
            continue
        assert on_ids[:5] == off_ids[:5], q.id  # the first five places never move
        applied.append((q, sel))
        gold_on += len(q.relevant & tools & set(on_ids))
        gold_off += len(q.relevant & tools & set(off_ids))
    return len(applied), gold_off, gold_on, applied
