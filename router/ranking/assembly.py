"""The selection assembly: the tools a ranking admits become `Selection`s, each with its scores,
its reason (ranked, pinned, named, companion, part), its schema's tokens and, read lazily, the
query terms it matched. Mixed into `Router` (router.ranking.engine), whose records, config and
dense index it reads; split from the engine to keep modules under ~400 lines.
"""
from __future__ import annotations

from functools import cache, partial
from typing import Any, Callable, Sequence

import numpy as np

from apidb.record import ApiRecord

from . import explain
from .budget import admit
from .companions import Companion
from .fusion import Ranking
from .selection import Selection, SelectionList
from ..tokens import tool_tokens


def _companion_fields(records: Sequence[ApiRecord], reason: str, why: Companion | None) -> dict[str, Any]:
    if reason != "companion" or why is None:
        return {}
    if why.anchor < 0:  # raised by the usage log at large (kind "used"), no one anchor
        return {"relation": why.kind}
    return {"companion_of": records[why.anchor].id, "relation": why.kind}


class SelectionAssembly:
    """`Router`'s last step: from the ranking to the `SelectionList` (see the module doc)."""

    def _tokens_of(self, rec: ApiRecord) -> int:
        if rec.id not in self._tool_tokens:
            self._tool_tokens[rec.id] = tool_tokens(rec.to_openai_tool())
        return self._tool_tokens[rec.id]

    def _assemble(self, query: str, ranking: Ranking, bm25_all: np.ndarray, qvec: np.ndarray | None,
                  k: int, pins: list[int], min_score: float | None, budget: int | None,
                  relative_cut: float | None = None, named: set[int] = frozenset(),
                  companions: dict[int, Companion] | None = None,
                  part_tools: dict[int, str] | None = None) -> SelectionList:
        # tolist() first: a dict built from numpy scalars cost ~0.5 ms per query at 20k tools (profile)
        fused = dict(zip(ranking.docs.tolist(), ranking.scores.tolist()))
        chosen, report = admit(ranking.docs.tolist(), fused, k, pins, min_score, budget,
                               lambda d: self._tokens_of(self.records[d]), lambda d: self.records[d], relative_cut)
        companions, part_tools = companions or {}, part_tools or {}
        chosen = [(d, "named" if d in named and why == "ranked" else
                   "companion" if d in companions and why == "ranked" else
                   "part" if d in part_tools and why == "ranked" else why) for d, why in chosen]
        return SelectionList(self._explain(query, chosen, fused, bm25_all, qvec, budget is not None, companions,
                                           part_tools), report)

    def _explain(self, query: str, chosen: list[tuple[int, str]], fused: dict[int, float],
                 bm25_all: np.ndarray, qvec: np.ndarray | None, with_tokens: bool = False,
                 companions: dict[int, Companion] | None = None,
                 part_tools: dict[int, str] | None = None) -> list[Selection]:
        stems = cache(lambda: explain.content_words(query))  # the query's words, stemmed once if read
        docs = np.array([d for d, _ in chosen], dtype=np.int64)
        dense = self._dense.score(qvec, docs) if (qvec is not None and len(docs)) else None
        out = []
        for pos, (d, reason) in enumerate(chosen):
            rec = self.records[d]
            # a content word is a BM25 query token, and a record's explained fields are the ones its
            # BM25 document was built from: no BM25 score, no matched term (skips a dense-only hit)
            # found when first read (Selection.explainer): the proxy never reads them
            hits = partial(self._matched, stems, d) if bm25_all[d] > 0 else None
            out.append(Selection(record=rec, score=fused.get(d, 0.0), rank=pos + 1,
                                 bm25_score=float(bm25_all[d]), dense_score=None if dense is None else float(dense[pos]),
                                 reason=reason, tokens=self._tokens_of(rec) if with_tokens else None,
                                 explainer=hits, **_companion_fields(self.records, reason, (companions or {}).get(d)),
                                 **({"part": part_tools[d]} if reason == "part" and part_tools else {})))
        return out

    def _matched(self, stems: Callable[[], dict[str, str]], d: int) -> dict[str, list[str]]:
        return explain.matched_fields(stems(), self.records[d], fields=self._fields_of(d))

    def _fields_of(self, d: int) -> list[tuple[str, frozenset[str]]]:
        """Record ``d``'s field tokens for explanations, kept by position: the shared memo
        (explain.field_tokens) is keyed by the content hash, whose canonical JSON cost ~0.1 ms a
        selected tool on every request (profile of an agent-length route at 20k tools)."""
        fields = self._field_memo.get(d)
        if fields is None:
            fields = self._field_memo[d] = explain.field_tokens(self.records[d], self.config.field_weights)
        return fields
