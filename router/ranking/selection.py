"""`Selection`: one tool a router chose for a request, with its scores and why."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from apidb.record import ApiRecord


class _Explained:
    """``matched_terms`` / ``matched_fields``: given, or made by the selection's ``explainer`` the first
    time either is read. Finding which of a request's words hit which fields of a tool renders and
    stems the tool's fields (~0.13 ms a tool new to the router, most of the explain step of an
    agent-length route at 20k tools); the proxy and the OpenAI wrapper never read it, so they
    no longer pay for it."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name, self.slot = name, f"_{name}"

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return None  # the dataclass default: nothing given
        value = obj.__dict__.get(self.slot)
        if value is None:
            found = obj.__dict__.get("_found")
            if found is None:
                found = obj.__dict__["_found"] = obj.explainer() if obj.explainer is not None else {}
            value = obj.__dict__[self.slot] = dict(found) if self.name == "matched_fields" else list(found)
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.slot] = value


@dataclass(frozen=True)
class Selection:
    """One selected tool and why: fused score and rank, BM25 score and matched terms (the query's
    content words found in the tool's text, each with the fields it was found in), dense cosine
    similarity, the reason ("ranked", "pinned", "named", "companion": raised by a relation to
    ``companion_of`` (router.ranking.companions), "part": the best tool of one ``part`` of a multi-part
    request (router.ranking.part_tools), or "substitute": below the top k, admitted in place
    of a tool the token budget dropped), when a budget was applied, its schema's tokens, and a note
    when its scores are partial (a live catalog's record not embedded yet: BM25 only).
    The matched terms and fields are found when first read (``explainer``; see _Explained)."""

    record: ApiRecord
    score: float
    rank: int
    bm25_score: float | None = None
    matched_terms: list[str] = _Explained()  # type: ignore[assignment]
    dense_score: float | None = None
    reason: str = "ranked"
    matched_fields: dict[str, list[str]] = _Explained()  # type: ignore[assignment]
    tokens: int | None = None
    note: str | None = None  # e.g. a record a live catalog has no vector for yet (router.ranking.watch)
    # makes matched_fields (word -> fields) on first read when they were not given
    explainer: Callable[[], dict[str, list[str]]] | None = field(default=None, repr=False, compare=False)
    # reason "companion": the selected tool whose relation (apidb.relations kind) brought this one;
    # relation "used" has none (the usage log at large: router.ranking.companions)
    companion_of: str | None = None
    relation: str | None = None
    # reason "part": the part of a multi-part request this tool is the best of (router.ranking.part_tools)
    part: str | None = None

    def to_dict(self) -> dict[str, Any]:
        r = self.record
        out: dict[str, Any] = {"id": r.id, "name": r.name, "namespace": r.namespace,
                               "score": round(float(self.score), 6)}
        if r.call is not None:
            out["call"] = r.call
        out.update({"rank": self.rank, "reason": self.reason,
                    "bm25_score": None if self.bm25_score is None else round(float(self.bm25_score), 6),
                    "matched_terms": list(self.matched_terms),
                    "matched_fields": {t: list(f) for t, f in self.matched_fields.items()},
                    "dense_score": None if self.dense_score is None else round(float(self.dense_score), 6)})
        if self.tokens is not None:
            out["tokens"] = self.tokens
        if self.note is not None:
            out["note"] = self.note
        if self.companion_of is not None:
            out["companion_of"] = self.companion_of
        if self.relation is not None:
            out["relation"] = self.relation
        if self.part is not None:
            out["part"] = self.part
        return out


class SelectionList(list):
    """The list `Router.select` returns: the selections, plus ``budget`` (a
    `router.ranking.budget.BudgetReport`: tokens used, what was dropped and why) when a token budget
    was given, else None; ``abstention`` (a `router.ranking.abstain.Abstention`, None when not measured:
    BM25 only, or a named tool) — ``abstained`` is True when no tool fits —; ``adaptive_k``, the
    number of ranked tools adaptive k let through (None for a fixed k); ``parts``, how many parts
    the request was read as (router.ranking.coverage)."""

    def __init__(self, items=(), budget: Any = None) -> None:
        super().__init__(items)
        self.budget = budget
        self.abstention: Any = None
        self.adaptive_k: int | None = None
        self.parts = 1

    @property
    def abstained(self) -> bool:
        return self.abstention is not None and self.abstention.abstained
