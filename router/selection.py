"""`Selection`: one tool a router chose for a request, with its scores and why."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from apidb.record import ApiRecord


@dataclass(frozen=True)
class Selection:
    """One selected tool and why: fused score and rank, BM25 score and matched terms,
    dense cosine similarity, and the reason ("ranked" or "pinned")."""

    record: ApiRecord
    score: float
    rank: int
    bm25_score: float | None = None
    matched_terms: list[str] = field(default_factory=list)
    dense_score: float | None = None
    reason: str = "ranked"

    def to_dict(self) -> dict[str, Any]:
        r = self.record
        out: dict[str, Any] = {"id": r.id, "name": r.name, "namespace": r.namespace,
                               "score": round(float(self.score), 6)}
        if r.call is not None:
            out["call"] = r.call
        out.update({"rank": self.rank, "reason": self.reason,
                    "bm25_score": None if self.bm25_score is None else round(float(self.bm25_score), 6),
                    "matched_terms": list(self.matched_terms),
                    "dense_score": None if self.dense_score is None else round(float(self.dense_score), 6)})
        return out
