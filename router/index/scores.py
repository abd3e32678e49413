"""What one retriever returns, and the score normalisation that makes two of them comparable.

Both the BM25 and the dense side answer with a `Ranking`; the fusion (router.ranking.fusion)
merges them, and a slotted dense index (router.index.dense_delta) fills in scores for tools it
has no vector for yet from the BM25 side's `min_max` scale. Kept here, below the ranking layer,
so the index never imports the ranking that uses it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Ranking:
    """One retriever's result: document indices best first, and their scores."""

    docs: np.ndarray
    scores: np.ndarray

    @classmethod
    def empty(cls) -> "Ranking":
        return cls(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))

    def __len__(self) -> int:
        return len(self.docs)


def min_max(scores: np.ndarray) -> np.ndarray:
    """Min-max norm, (s - min) / (max - min); when all scores are equal (e.g. one BM25 hit)
    they all become 1, so a lone match still counts in the fusion."""
    if len(scores) == 0:
        return scores.astype(np.float64)
    lo, hi = float(scores.min()), float(scores.max())
    if hi - lo <= 0:
        return np.ones(len(scores), dtype=np.float64)
    return (scores.astype(np.float64) - lo) / (hi - lo)
