"""Adaptive k: how many of the ranked tools to send, read from the scores.

A fixed k sends five tools for "what's the weather in Oslo" (one fits) and five for a request
that needs three tools from two APIs (five are often too few). The cut keeps every tool whose
*strength* reaches ``ratio`` x the strongest one's, never fewer than ``floor`` and never more
than the ceiling k:

- a tool's strength is its fused score over the top score; for a request of several parts
  (router.ranking.coverage) it is the larger of that and its best relevance to one part, so the best
  tool of a short second clause is not cut for scoring low against the whole request;
- the token budget still applies after the cut (router.ranking.budget): the cut only decides how many
  of the ranked tools are candidates.

The default ratio was chosen on the curve of tokens sent vs all-gold-tools-offered measured by
`toolsift bench routing` (the rule and the curve: docs/routing.md). ``k`` given by a user is a
fixed k; adaptive k uses ``k`` as its ceiling (see `Router.select`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import RouterError

DEFAULT_RATIO = 0.6   # RouterConfig.adaptive_ratio is what routing uses (chosen: docs/routing.md)
DEFAULT_FLOOR = 1


@dataclass(frozen=True)
class AdaptiveK:
    """The adaptive cut's settings: strength ``ratio`` of the top one, at least ``floor`` tools."""

    ratio: float = DEFAULT_RATIO
    floor: int = DEFAULT_FLOOR

    def __post_init__(self) -> None:
        if not 0 <= self.ratio <= 1:
            raise RouterError(f"adaptive k: ratio must be between 0 and 1, got {self.ratio!r}")
        if self.floor < 1:
            raise RouterError(f"adaptive k: floor must be at least 1, got {self.floor!r}")

    def kept(self, strengths: np.ndarray, ceiling: int) -> np.ndarray:
        """The places (in rank order) among the first ``ceiling`` whose tools are kept: every one
        whose strength reaches the bar, wherever it is ranked (``strengths`` in rank order).

        Not the first *n* for n such tools: a stage that re-orders the ranking (coverage's picks,
        companions) can put a weak tool above a strong one, and a count would send the weak one in
        its place (measured: `toolsift bench routing --only companions`, column `all gold sent`)."""
        s = np.asarray(strengths[:ceiling], dtype=np.float64)
        if not len(s):
            return np.zeros(0, dtype=np.int64)
        top = float(s.max())
        strong = s >= self.ratio * top if top > 0 else np.zeros(len(s), dtype=bool)
        short = min(self.floor, len(s)) - int(strong.sum())
        if short > 0:  # never fewer than the floor: the first places not kept yet make it up
            strong[np.flatnonzero(~strong)[:short]] = True
        return np.flatnonzero(strong)

    def cut(self, strengths: np.ndarray, ceiling: int) -> int:
        """How many of the first ``ceiling`` ranked tools are kept (`kept`)."""
        return len(self.kept(strengths, ceiling))
