"""Complete sets for multi-part requests: each part's own best tool, right after the first places.

Coverage (router.ranking.coverage) re-orders the top of the whole request's ranking, so a part
whose tool the whole request ranks far down (a short clause beside a long one) is never served:
"Find a 7-letter word that starts with 'fru'. Additionally, fetch the income data for ZIP code
98765" ranks word tools first, and the income tool sits below the top 30. Here each part of the
request (coverage's clause spans: sentences and chaining connectives) is ranked on its own, over
the whole catalog, with the same two signals as the request (BM25 of the part's words, the part's
own vector: the parts are encoded apart, one per core), and its best ``per_part`` tools that are not
among the first ``keep`` places take the places right after them, in the parts' order. The first
``keep`` places never move, so a single-part request, and the best tools of any request, stay
where they were. On or off, and how many per part, is chosen cross-fitted by
`toolsift bench routing --only parts` (docs/routing.md).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .fusion import Ranking

__all__ = ["bring_part_tools"]


def bring_part_tools(router: Any, ranking: Ranking, parts: Any, query: str, method: str,
                     allowed: np.ndarray | None, *, per_part: int, keep: int) -> tuple[Ranking, dict[int, str]]:
    """The ranking with each part's best tools placed after the first ``keep``, and the part (its
    text) each placed tool is the best of. Unchanged for requests of fewer than two parts."""
    if per_part <= 0 or parts is None or len(parts.spans) < 2 or len(ranking) <= keep:
        return ranking, {}
    head = ranking.docs[:keep].tolist()
    taken = set(head)
    brought: dict[int, str] = {}
    depth = keep + per_part
    # Each part encoded on its own: pooled from the request's one encoder pass (as coverage does), a
    # part's vector leans to the whole request and its best tool is mostly one the request already
    # ranks first (G2 multi-tool all gold @10 0.717 -> 0.717 pooled, 0.802 encoded apart; bench).
    texts = [query[s:e] for s, e in parts.spans]
    vectors = router.encode_queries(texts) if method != "bm25" else None
    for i, text in enumerate(texts):
        lex = None if parts.lexical is None else parts.lexical[i]
        vec = None if vectors is None else vectors[i]
        if method == "bm25" or vec is None:  # a part past the encoder's length limit: BM25 alone
            if lex is None:
                continue
            own = router._rank_one(lex, None, "bm25", allowed, depth)
        else:
            own = router._rank_one(lex, vec, method if lex is not None else "dense", allowed, depth)
        for d in own.docs[:per_part].tolist():
            if d not in taken:
                taken.add(d)
                brought[d] = text
    if not brought:
        return ranking, {}
    cap = float(np.min(ranking.scores[:keep]))  # a brought tool never outscores the places kept
    rest = [i for i, d in enumerate(ranking.docs.tolist()) if d not in brought and i >= keep]
    docs = np.concatenate([ranking.docs[:keep], np.array(list(brought), dtype=np.int64), ranking.docs[rest]])
    scores = np.concatenate([ranking.scores[:keep], np.full(len(brought), cap), ranking.scores[rest]])
    return Ranking(docs.astype(np.int64), scores.astype(np.float64)), brought
