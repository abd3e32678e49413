"""Where the gold tools a multi-tool request still lacks after companions are, per file: the
`misses` block of `toolsift bench routing --only companions` (benchmarks/routing/companions.py)."""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from apidb.relations import api_key, category_key
from router.index.scores import Ranking
from router.ranking.companions import complete

from .common import corpus, other_half

CEILING_POOLS = (20, 30)  # how far down a perfect re-ranking of places 6-10 may reach (and the whole pool)


def misses(cs: list[Any], graphs: dict[tuple[str, str], Any], chosen: dict[str, dict[str, Any]],
           pool: int) -> dict[str, dict]:
    """Per multi-tool file (``cs``: companions.Case, each with its top ``pool``): where the gold
    tools still missing from the top 10 are, once the scored half's companions (the other half's
    choice) re-ranked its top ``pool``: below 10 or outside the pool; related to one of the first
    tools (the anchors) and how; of the same API or category as a gold tool that made the top 10;
    and whether the request spells out the tool's API name. ``ceiling``: the requests complete if
    places keep+1 to 10 took the top N's gold tools (a perfect re-ranking there)."""
    out: dict[str, dict] = {}
    pools = (*CEILING_POOLS, pool)
    for c in cs:
        if not c.multi:
            continue
        pick, graph, recs = chosen[other_half(c.half)], graphs[(corpus(c.file), c.half)], c.router.records
        anchors = c.router.config.companion_anchors
        new, _ = complete(Ranking(np.array(c.docs, dtype=np.int64), np.array(c.scores, dtype=np.float64)), graph,
                          pick["weights"], anchors=anchors, keep=pick["keep"])
        top = new.docs.tolist()
        gold = [c.router._index[g] for g in sorted(c.q.relevant) if g in c.router._index]
        found = [g for g in gold if g in top[:10]]
        row = out.setdefault(c.file, {"requests": 0, "incomplete": 0, "missing": 0})
        row["requests"] += 1
        row["incomplete"] += len(found) < len(gold)
        ceiling = row.setdefault("ceiling", dict.fromkeys(map(str, pools), 0))
        for n in pools:  # every gold tool in the top n, and no more below the kept places than fit
            ceiling[str(n)] += set(gold) <= set(top[:n]) and len(set(gold) - set(top[:pick["keep"]])) <= 10 - pick["keep"]
        words = set(re.findall(r"[a-z0-9]+", c.q.text.lower()))
        for g in set(gold) - set(found):
            kinds = sorted({kind for a in top[:anchors] for t, kind, _ in graph.related(a) if t == g})
            api = (recs[g].metadata or {}).get("tool_name") or (recs[g].metadata or {}).get("server")
            facts = ["missing", f"ranked 11-{pool}" if g in top else f"outside the top {pool}",
                     *(f"related to an anchor: {k}" for k in kinds or ["none"]),
                     "same API as a found gold tool" if any(api_key(recs[f]) == api_key(recs[g]) for f in found)
                     else "same category as a found gold tool"
                     if any(category_key(recs[f]) == category_key(recs[g]) for f in found) else "",
                     "the request spells out its API's name"
                     if api and set(re.findall(r"[a-z0-9]+", str(api).lower())) <= words else ""]
            for fact in filter(None, facts):
                row[fact] = row.get(fact, 0) + 1
    return out
