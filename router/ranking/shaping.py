"""What happens to a fused ranking before tools are admitted: exact names first, complete sets for
multi-part requests, the adaptive cut, and abstention (one module each: router.ranking.exact_names,
router.ranking.coverage, router.ranking.adaptive_k, router.ranking.abstain). The engine calls `shape` once per request;
this module holds the glue so that the engine keeps only the retrieval itself.

Order, and why:
1. coverage re-orders the top of the fused ranking (a tool per part of the request);
2. tools the query names go to the top (router.ranking.exact_names), above anything coverage chose;
2b. the companions the first tools' relations make likely rise (router.ranking.companions), below
   the first places, so that a multi-step request gets the rest of its set;
2c. each part's own best tool takes the places right after the first ones (router.ranking.part_tools);
3. the abstention decision reads the raw evidence (not the min-max normalized scores, whose top
   is always 1): no named tool and weak evidence → abstain;
4. adaptive k picks how many of the ranked tools are candidates for admission (router.ranking.budget
   then applies ``min_score`` and the token budget as before); each part's own tool among the
   ceiling's places is sent after the ones the cut keeps (``adaptive_part_tools``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import text as rtext
from ..index.vector_index import cosines
from .abstain import Abstention, evidence
from .adaptive_k import AdaptiveK
from .companions import Companion, complete
from .coverage import cover, part_relevance
from .fusion import Ranking
from .part_tools import bring_part_tools


@dataclass
class Parts:
    """A multi-part request's parts (router.ranking.coverage.clause_spans) and their signals, per catalog
    tool: BM25 rows (parts x tools) and part vectors (parts x dim), either None when unused."""

    spans: list[tuple[int, int]]
    lexical: list[np.ndarray] | None = None
    vectors: np.ndarray | None = None
    # the words a part is ranked by with BM25 where they are not its own text (a step the request
    # implies: an output file's part, router.ranking.output_file, or a relative date's,
    # router.ranking.relative_time), else None
    words: list[str | None] | None = None

    def clauses(self) -> "Parts | None":
        """The parts the request's own words cut (no implied step's part), None unless two or more:
        what coverage spreads the top places over and abstention reads. An implied step's part only
        brings its own tool (router.ranking.part_tools): in a catalog with no tool that writes files
        or tells the date, the best of a bad lot must not move the first places."""
        if not self.words:
            return self if len(self.spans) >= 2 else None
        keep = [i for i, w in enumerate(self.words) if w is None]
        if len(keep) < 2:
            return None
        return Parts([self.spans[i] for i in keep],
                     None if self.lexical is None else [self.lexical[i] for i in keep],
                     None if self.vectors is None else self.vectors[keep])


@dataclass
class Shaped:
    ranking: Ranking
    k: int                                   # how many ranked tools may be admitted
    named: list[int] = field(default_factory=list)
    strengths: dict[int, float] = field(default_factory=dict)
    abstention: Abstention | None = None
    parts: int = 1
    companions: dict[int, Companion] = field(default_factory=dict)
    part_tools: dict[int, str] = field(default_factory=dict)  # a part's best tool -> the part (its text)


def part_signals(router: Any, query: str, spans: list[tuple[int, int]], method: str,
                 vectors: np.ndarray | None, words: list[str | None] | None = None) -> Parts:
    """Per-part BM25 over the whole catalog (when BM25 takes part) and the part vectors."""
    lex = None
    if vectors is not None and len(vectors) != len(spans):
        vectors = None  # a part past the encoder's length limit has no vector: BM25 alone serves parts
    if method != "dense":
        tok = (lambda t: list(dict.fromkeys(rtext.tokenize(t)))) if router.config.unique_query_terms \
            else rtext.tokenize
        texts = [query[s:e] if w is None else w for (s, e), w in zip(spans, words or [None] * len(spans))]
        lex = [router.lexical.scores(tok(t)) for t in texts]
    return Parts(spans, lex, vectors, words)


def _coverage(router: Any, ranking: Ranking, parts: Parts, lam: float, pool: int,
              picks: int) -> tuple[Ranking, dict[int, float]]:
    head = min(pool, len(ranking))
    docs = ranking.docs[:head]
    lex = None if parts.lexical is None else np.stack([row[docs] for row in parts.lexical], axis=1)
    dense = None
    if parts.vectors is not None and router._dense is not None and len(parts.vectors):
        dense = cosines(router._dense.vectors[docs], parts.vectors)
    if lex is None and dense is None:
        return ranking, {}
    rel = part_relevance(lex, dense, router.config.weights)
    n_parts = rel.shape[1]
    scores = ranking.scores[:head].astype(np.float64)
    # only the places that can be sent are chosen greedily; the rest of the pool keeps its order
    order = cover(scores, rel, np.full(n_parts, 1.0 / n_parts), lam, min(picks, head))
    order = np.concatenate([order, np.setdiff1d(np.arange(head), order, assume_unique=True)])
    top = float(scores[0]) if head and scores[0] > 0 else 1.0
    strength = np.maximum(scores / top, rel.max(axis=1))
    new_docs = np.concatenate([docs[order], ranking.docs[head:]])
    new_scores = np.concatenate([ranking.scores[:head][order], ranking.scores[head:]])
    return Ranking(new_docs, new_scores), {int(d): float(s) for d, s in zip(docs, strength)}


def _promote(ranking: Ranking, named: list[int]) -> Ranking:
    """Named tools first (in the order the query names them), scored at least the top score."""
    if not named:
        return ranking
    top = float(ranking.scores[0]) if len(ranking) else 1.0
    pos = {int(d): i for i, d in enumerate(ranking.docs.tolist())}
    front_scores = [max(top, float(ranking.scores[pos[d]])) if d in pos else top for d in named]
    rest = np.array([d not in set(named) for d in ranking.docs.tolist()], dtype=bool)
    return Ranking(np.concatenate([np.array(named, dtype=np.int64), ranking.docs[rest]]),
                   np.concatenate([np.array(front_scores, dtype=np.float64), ranking.scores[rest]]))


def _send(ranking: Ranking, kept: np.ndarray, ceiling: int, part_tools: dict[int, str]) -> tuple[Ranking, int]:
    """The ranking with what adaptive k sends first, and how many that is: the places ``kept``
    (AdaptiveK.kept: every tool strong enough against the request, in rank order), then each
    part's own tool among the first ``ceiling`` places not kept already (a short clause's tool
    scores low against the whole request: it is there for its part). Fixed k never comes here:
    its order is unchanged."""
    first = kept.tolist()
    sent = set(first)
    docs = ranking.docs[:ceiling].tolist()
    first += [i for i in range(len(docs)) if docs[i] in part_tools and i not in sent]
    if first == list(range(len(first))):
        return ranking, len(first)
    sent = set(first)
    order = np.array(first + [i for i in range(len(ranking)) if i not in sent], dtype=np.int64)
    return Ranking(ranking.docs[order], ranking.scores[order]), len(first)


def shape(router: Any, query: str, ranking: Ranking, parts: Parts | None, allowed: np.ndarray | None,
          method: str, k: int, adaptive: AdaptiveK | None, qvec: np.ndarray | None,
          bm25_all: np.ndarray, abstain_below: float | None) -> Shaped:
    """Coverage, exact names, abstention and the adaptive cut over one request's fused ranking."""
    c = router.config
    strengths: dict[int, float] = {}
    clauses = None if parts is None else parts.clauses()
    if clauses is not None and c.coverage > 0 and len(ranking) > 1:
        ranking, strengths = _coverage(router, ranking, clauses, c.coverage, c.coverage_pool, k)
    named: list[int] = []
    if c.exact_names:
        named = [d for d in router.name_table().find(query) if allowed is None or allowed[d]]
        ranking = _promote(ranking, named)
    companions: dict[int, Companion] = {}
    weights = c.companion_weights
    if any(w > 0 for w in weights.values()) and len(ranking) > 1:
        ranking, companions = complete(ranking, router.relation_graph(), weights, anchors=c.companion_anchors,
                                       keep=c.companion_keep, allowed=allowed, fixed=named)
    part_tools: dict[int, str] = {}
    if c.part_tools > 0 and parts is not None:
        keep = max(c.companion_keep, len(named))
        ranking, part_tools = bring_part_tools(router, ranking, parts, query, method, allowed,
                                               per_part=c.part_tools, keep=keep, signal=c.part_signal,
                                               floor=c.part_floor, tie=c.part_tie)
        companions = {d: why for d, why in companions.items() if d not in part_tools}
    abstention = None
    if abstain_below is not None and not named and method != "bm25" and qvec is not None:
        vecs = qvec.reshape(1, -1) if clauses is None or clauses.vectors is None else \
            np.vstack([qvec.reshape(1, -1), clauses.vectors])
        strongest = evidence(router._dense, vecs, ranking.docs[:max(k, 20)])
        abstention = Abstention(strongest, abstain_below)
    n = k
    if adaptive is not None and len(ranking):
        top = float(ranking.scores[0]) if ranking.scores[0] > 0 else 1.0
        s = np.array([1.0 if d in named else strengths.get(d, float(sc) / top)
                      for d, sc in zip(ranking.docs[:k].tolist(), ranking.scores[:k].tolist())])
        ranking, n = _send(ranking, adaptive.kept(s, k), k, part_tools if c.adaptive_part_tools else {})
    return Shaped(ranking, n, named, strengths, abstention, 1 if parts is None else max(1, len(parts.spans)),
                  companions, part_tools)
