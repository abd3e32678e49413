"""Complete sets for multi-part requests: each part's own best tool, right after the first places.

Coverage (router.ranking.coverage) re-orders the top of the whole request's ranking, so a part
whose tool the whole request ranks far down (a short clause beside a long one) is never served:
"Find a 7-letter word that starts with 'fru'. Additionally, fetch the income data for ZIP code
98765" ranks word tools first, and the income tool sits below the top 30. Here each part of the
request (coverage's clause spans: sentences and chaining connectives) is ranked on its own, over
the whole catalog, by BM25 of the part's words (``signal`` "hybrid": also by the part's own vector,
each part encoded apart, which costs the encoder about a second pass over the request), and its
best ``per_part`` tools that are not
among the first ``keep`` places take the places right after them, in the parts' order. The first
``keep`` places never move, so a single-part request, and the best tools of any request, stay
where they were. On or off, and how many per part, is chosen cross-fitted by
`toolsift bench routing --only parts` (docs/routing.md).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..index.vector_index import cosines
from .fusion import Ranking

__all__ = ["bring_part_tools"]


def bring_part_tools(router: Any, ranking: Ranking, parts: Any, query: str, method: str,
                     allowed: np.ndarray | None, *, per_part: int, keep: int,
                     signal: str = "bm25", floor: float | None = None,
                     tie: float | None = None) -> tuple[Ranking, dict[int, str]]:
    """The ranking with each part's best tools placed after the first ``keep``, and the part (its
    text) each placed tool is the best of. Unchanged for requests of fewer than two parts. With a
    ``floor``, a part's tool is placed only when its cosine with the part's vector (pooled from the
    request's one encoder pass) reaches it; parts without a vector are not held to it. With a
    ``tie``, a part also brings its next tool when that tool's own score is at least ``tie`` times
    its best tool's: a part its words cannot settle between two tools gets both."""
    if per_part <= 0 or parts is None or len(parts.spans) < 2 or len(ranking) <= keep:
        return ranking, {}
    head = ranking.docs[:keep].tolist()
    taken = set(head)
    brought: dict[int, str] = {}
    depth = keep + per_part + (1 if tie is not None else 0)
    # A part's own signal: BM25 of its words (no encoder work: the rows coverage computed), or with
    # ``signal`` "hybrid" also its own vector, each part encoded apart (one per core). Not the part
    # vectors pooled from the request's one encoder pass: those lean to the whole request, so a
    # part's best tool by them is mostly one the request already ranks first (tried: they brought
    # fewer of the missing tools than the part's words alone).
    texts = [query[s:e] for s, e in parts.spans]
    vectors = parts.vectors if parts.lexical is None else None  # dense-only routing: pooled is all there is
    if signal == "hybrid" and method != "bm25":  # an implied step's part: its words
        words = parts.words or [None] * len(texts)
        vectors = router.encode_queries([t if w is None else w for t, w in zip(texts, words)])
    # The floor: a part that asks for nothing ("Today is October 13th, 2024.", "We need two rooms.")
    # still has a best tool by its words, one that shares a word with it; placed after the first
    # places it pushes a tool the request does need out of the top 10. Its vector, read in the whole
    # request, resembles no such tool. Measured and chosen by `toolsift bench routing --only companions`.
    pooled = parts.vectors if floor is not None and router._dense is not None else None
    owns = []
    for i, text in enumerate(texts):
        lex = None if parts.lexical is None else parts.lexical[i]
        vec = None if vectors is None else vectors[i]
        if method == "bm25" or vec is None:  # a part past the encoder's length limit: BM25 alone
            if lex is None:
                continue
            own = router._rank_one(lex, None, "bm25", allowed, depth)
        else:
            own = router._rank_one(lex, vec, method if lex is not None else "dense", allowed, depth)
        owns.append((i, text, own))

    def bring(i: int, text: str, docs: list[int]) -> None:
        picks = [d for d in docs if d not in taken]
        if pooled is not None and picks:
            sims = cosines(router._dense.vectors[picks], pooled[i])[:, 0]
            picks = [d for d, sim in zip(picks, sims.tolist()) if sim >= floor]
        for d in picks:
            taken.add(d)
            brought[d] = text

    for i, text, own in owns:
        bring(i, text, own.docs[:per_part].tolist())
    # The tie: "get the most popular songs" scores getPopularMusic and getSongs nearly alike, and the
    # part's words cannot say which one the agent means; one more tool costs less than a missing one.
    # A ratio of the part's own scores (BM25, or fused), so it reads the same on any catalog. Placed
    # after every part's best, so a tie never pushes another part's only tool out of the top places.
    for i, text, own in owns if tie is not None else ():
        if len(own) > per_part and own.scores[0] > 0 and own.scores[per_part] >= tie * own.scores[0]:
            bring(i, text, [int(own.docs[per_part])])
    if not brought:
        return ranking, {}
    cap = float(np.min(ranking.scores[:keep]))  # a brought tool never outscores the places kept
    rest = [i for i, d in enumerate(ranking.docs.tolist()) if d not in brought and i >= keep]
    docs = np.concatenate([ranking.docs[:keep], np.array(list(brought), dtype=np.int64), ranking.docs[rest]])
    scores = np.concatenate([ranking.scores[:keep], np.full(len(brought), cap), ranking.scores[rest]])
    return Ranking(docs.astype(np.int64), scores.astype(np.float64)), brought
