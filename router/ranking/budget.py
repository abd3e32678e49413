"""Which ranked tools a selection admits: top-k, ``min_score`` and the token budget.

A token budget only takes away. The top-k tools are admitted in rank order while their schemas
fit; a tool that does not fit is dropped, with the reason. A lower-ranked tool may take a dropped
tool's place only if its score clears the relevance cut: ``min_score`` and ``relative_cut`` x the
top score. Before this rule a budget that the next tools did not fit skipped down the ranking to
whatever small tool fitted (issue 14: ``-k 5 --token-budget 400`` on a flight question admitted
``tmdb/GET_tv-on_the_air`` at score 0.17; with 50 it returned only an unrelated audio model).

The report (`BudgetReport`) says what was spent, what was dropped and why, so the command line can
show it and a library caller can log it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from apidb.record import ApiRecord

from ..errors import RouterError

# Substitutes must score at least half the top score. Fused hybrid scores are min-max normalized
# over the candidate lists, so the top tool scores ~1 and half of it is a tool the query still
# clearly matches; in the flight example the tool the old rule pulled in scored 0.17.
DEFAULT_RELATIVE_CUT = 0.5


@dataclass(frozen=True)
class Dropped:
    """A ranked tool the budget left out, and why."""

    record: ApiRecord
    rank: int                # its place in the ranking (1 = best)
    score: float
    tokens: int | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.record.id, "rank": self.rank, "score": round(float(self.score), 6),
                "tokens": self.tokens, "reason": self.reason}


@dataclass
class BudgetReport:
    """What a token budget did to one selection: tokens ``used`` of ``limit``; ``dropped``, the
    top-k tools that did not fit; the relevance ``cut`` a substitute had to clear; how many
    candidates above the cut were ``skipped`` for not fitting either; and why the search for
    substitutes ``stopped`` (None: k tools were admitted, or the ranking ran out)."""

    limit: int
    used: int = 0
    cut: float | None = None
    dropped: list[Dropped] = field(default_factory=list)
    skipped: int = 0
    stopped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"limit": self.limit, "used": self.used,
                "cut": None if self.cut is None else round(float(self.cut), 6),
                "dropped": [d.to_dict() for d in self.dropped], "skipped": self.skipped, "stopped": self.stopped}


def relevance_cut(top_score: float | None, min_score: float | None, relative_cut: float) -> float | None:
    """The score a substitute must reach: the higher of ``min_score`` and ``relative_cut`` x top."""
    cuts = [c for c in (min_score, None if top_score is None or top_score <= 0 else relative_cut * top_score)
            if c is not None]
    return max(cuts) if cuts else None


def admit(docs: Sequence[int], scores: dict[int, float], k: int, pins: list[int], min_score: float | None,
          budget: int | None, tokens_of: Callable[[int], int], record_of: Callable[[int], ApiRecord],
          relative_cut: float | None = None) -> tuple[list[tuple[int, str]], BudgetReport | None]:
    """(doc, reason) of the admitted tools in order, pinned first, and the budget's report.

    ``docs`` is the ranking (best first), ``scores`` each doc's score in it, ``pins`` the pinned
    docs (always admitted, outside ``k``; over the budget on their own is an error).
    """
    rel = DEFAULT_RELATIVE_CUT if relative_cut is None else relative_cut
    if not 0 <= rel <= 1:
        raise RouterError(f"relative_cut must be between 0 and 1, got {relative_cut!r}")
    chosen: list[tuple[int, str]] = [(i, "pinned") for i in pins]
    report = None
    if budget is not None:
        report = BudgetReport(limit=budget, used=sum(tokens_of(i) for i in pins))
        if report.used > budget:
            raise RouterError(f"the pinned tools alone need {report.used} tokens, over the budget of {budget}")
    pinned = set(pins)
    ranked = [d for d in docs if d not in pinned and (min_score is None or scores[d] >= min_score)]
    if report is None:
        return chosen + [(d, "ranked") for d in ranked[:k]], None
    report.cut = relevance_cut(scores[ranked[0]] if ranked else None, min_score, rel)
    n = 0
    for pos, d in enumerate(ranked):
        if n >= k:
            break
        if pos >= k and report.cut is not None and scores[d] < report.cut:
            report.stopped = (f"rank {pos + 1} ({record_of(d).id}) scores {scores[d]:.3f}, below the relevance "
                              f"cut {report.cut:.3f}: no substitute from there on")
            break
        cost = tokens_of(d)
        if report.used + cost > budget:
            if pos < k:
                report.dropped.append(Dropped(record_of(d), pos + 1, scores[d], cost,
                                              f"does not fit: needs {cost} tokens, {budget - report.used} left"))
            else:
                report.skipped += 1
            continue
        report.used += cost
        chosen.append((d, "ranked" if pos < k else "substitute"))
        n += 1
    return chosen, report
