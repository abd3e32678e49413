"""Complete sets: after the first ranking, the companions the top tools' relations make likely.

A request that needs several tools often names one of them well and the others barely ("the number
of films directed by Sofia Coppola" names the credits endpoint, not the person search it needs first).
The relations of apidb.relations (same API, same category, produces-for, feeds, co-use) say which
tools go with the ones ranked first. This stage gives each catalog tool related to one of the first
``anchors`` tools an evidence

    e(c) = max over anchors a of  s(a) x sum over kinds of  weight[kind] x strength(a -> c, kind)

(the strongest relation of each kind; kinds that agree add up: within one API every endpoint is a
``same_api`` companion, and only the sum lets the one that also produces the id the anchor needs
stand above the rest), where s is the ranking's score relative to its top (made non-increasing, so
the order coverage and exact names chose is kept), and orders every place after the first ``keep``
by s(c) + e(c): a companion rises, a tool with no relation to the request's best tools keeps its
place relative to the others. The first ``keep`` places never move, so a single-tool request's best
tools stay where they were; an anchor brings at most ``per_anchor`` companions (its likeliest) and
stays above them; tools the request may not see (filters) are never companions. Each weight is
chosen per kind on half of the labelled multi-tool requests and scored on the other half
(`toolsift bench routing --only companions`, docs/routing.md).

A usage log also says which tools agents call with others at all, whatever the anchor: the ``used``
kind adds weight[used] x u(c) to every tool after the first ``keep`` places, u being the number of
tools the learned co-use pairs pair it with, on a log scale relative to the most paired tool (0 for
a tool no pair names, so a catalog with no usage log is unchanged). A request names its main tool
well; the other tool it needs is often one of the few a catalog's multi-step work keeps coming back
to, and when the anchor is rare no co-use pair with it says so.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping, Sequence

import numpy as np

from apidb.record import ApiRecord
from apidb.relations import Relation, api_key, category_key, producer_links

from .fusion import Ranking

__all__ = ["Companion", "RelationGraph", "complete", "stored_co_use"]

# a group this large says little about any one member (a flat namespace, a huge category)
MAX_GROUP = 500


@dataclass(frozen=True)
class Companion:
    """Why a tool was added: a ``kind`` relation from the tool at index ``anchor`` (-1 for ``used``:
    the usage log at large, no one anchor)."""

    anchor: int
    kind: str
    evidence: float


@dataclass
class RelationGraph:
    """The relations of one router's records, by record index."""

    groups: dict[str, np.ndarray] = field(default_factory=dict)       # kind -> group id per record (-1)
    members: dict[str, list[np.ndarray]] = field(default_factory=dict)  # kind -> records of each group
    links: dict[int, list[tuple[int, str, float]]] = field(default_factory=dict)  # co-use edges
    # produces_for and feeds edges stay within one API: derived per API when a request first reaches it
    # (deriving them for a whole 20k-tool catalog was 0.2 s of every fresh `toolsift route`)
    records: Sequence[ApiRecord] = ()
    apis: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # API group per record
    api_members: list[np.ndarray] = field(default_factory=list)
    _produced: dict[int, dict[int, list[tuple[int, str, float]]]] = field(default_factory=dict, repr=False)
    _memo: dict[int, list[tuple[int, str, float]]] = field(default_factory=dict, repr=False)
    # u per record (module doc): how widely the learned co-use pairs name it, 0..1 (None: no pairs)
    use: np.ndarray | None = None

    @classmethod
    def build(cls, records: Sequence[ApiRecord], co_use: Iterable[Relation] = ()) -> "RelationGraph":
        graph = cls(records=records)
        for kind, key in (("same_api", api_key), ("same_category", category_key)):
            g, members = _grouped([key(r) for r in records])
            if members:
                graph.groups[kind], graph.members[kind] = g, members
        # producer_links groups by API, else namespace: the same groups, each derived on its own
        graph.apis, graph.api_members = _grouped([api_key(r) or r.namespace for r in records])
        index = {r.id: i for i, r in enumerate(records)}
        # one edge per (companion, kind): the kinds are weighted apart, so none may hide another
        links: dict[int, dict[tuple[int, str], float]] = defaultdict(dict)
        for rel in co_use:
            a, b = index.get(rel.source), index.get(rel.target)
            if a is None or b is None or a == b:
                continue  # a pair naming a tool the catalog no longer has
            key = (b, rel.kind)
            links[a][key] = max(links[a].get(key, 0.0), float(rel.strength))
        graph.links = {a: [(b, kind, s) for (b, kind), s in targets.items()] for a, targets in links.items()}
        partners = np.zeros(len(records), dtype=np.float64)
        for a, targets in graph.links.items():
            partners[a] = sum(1 for _, kind, _ in targets if kind == "co_use")
        if partners.max(initial=0.0) > 0:
            graph.use = np.log1p(partners) / np.log1p(partners.max())
        return graph

    def related(self, anchor: int) -> list[tuple[int, str, float]]:
        """(companion, kind, strength) for one record (kept: the same tools anchor many requests)."""
        got = self._memo.get(anchor)
        if got is None:
            got = self._memo[anchor] = list(self._related(anchor))
        return got

    def _related(self, anchor: int) -> Iterable[tuple[int, str, float]]:
        for kind, g in self.groups.items():
            gid = int(g[anchor])
            if gid < 0:
                continue
            members = self.members[kind][gid]
            if 1 < len(members) <= MAX_GROUP:
                strength = 1.0 if kind == "same_api" else 1.0 / np.log2(1 + len(members))
                for m in members.tolist():
                    if m != anchor:
                        yield m, kind, float(strength)
        if len(self.apis):
            yield from self._producers(int(self.apis[anchor])).get(anchor, ())
        yield from self.links.get(anchor, ())

    def _producers(self, api: int) -> dict[int, list[tuple[int, str, float]]]:
        """The produces_for and feeds edges within one API group, by consumer (derived once)."""
        got = self._produced.get(api)
        if got is None:
            members = self.api_members[api].tolist()
            position = {self.records[m].id: m for m in members}
            got = defaultdict(list)
            for rel in producer_links([self.records[m] for m in members]):
                got[position[rel.source]].append((position[rel.target], rel.kind, float(rel.strength)))
            got = self._produced[api] = dict(got)
        return got

    def counts(self) -> dict[str, int]:
        """How many directed relations of each kind (for `toolsift catalog relations`)."""
        out: dict[str, int] = defaultdict(int)
        for kind, members in self.members.items():
            out[kind] += sum(len(m) * (len(m) - 1) for m in members if 1 < len(m) <= MAX_GROUP)
        for api in range(len(self.api_members)):
            for targets in self._producers(api).values():
                for _, kind, _ in targets:
                    out[kind] += 1
        for targets in self.links.values():
            for _, kind, _ in targets:
                out[kind] += 1
        return dict(out)


def _grouped(keys: Sequence[str | None]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Group id per position (-1: no key) and the positions of each group, in position order."""
    ids: dict[str, int] = {}
    g = np.full(len(keys), -1, dtype=np.int64)
    for i, k in enumerate(keys):
        if k is not None:
            g[i] = ids.setdefault(k, len(ids))
    members: list[np.ndarray] = []
    if ids:
        order = np.argsort(g, kind="stable")
        counts = np.bincount(g[g >= 0], minlength=len(ids))
        start = int((g < 0).sum())
        for n in counts:
            members.append(order[start:start + n])
            start += n
    return g, members


def stored_co_use(location: object, warnings: list[str]) -> list[Relation]:
    """The co-use relations a catalog stores (`toolsift catalog relations --learn-from-log`); an
    unreadable store is a warning, not a failure: routing works without them."""
    from apidb.catalog import Catalog
    from apidb.errors import CatalogError

    try:
        with Catalog.open(location, readonly=True) as cat:  # type: ignore[arg-type]
            return cat.co_use()
    except CatalogError as exc:
        warnings.append(f"co-use relations not loaded: {exc}")
        return []


def complete(ranking: Ranking, graph: RelationGraph, weights: Mapping[str, float], *, anchors: int,
             keep: int, per_anchor: int = 8, allowed: np.ndarray | None = None,
             fixed: Iterable[int] = ()) -> tuple[Ranking, dict[int, Companion]]:
    """The ranking with companions raised (module doc), and why each raised tool moved.

    ``allowed``: a mask of the records the request may see (filters); ``fixed``: records whose
    place must not change (named tools). Returns the ranking unchanged when no weight is set.
    """
    if not len(ranking) or not any(w > 0 for w in weights.values()):
        return ranking, {}
    used = weights.get("used", 0.0)
    docs = ranking.docs.tolist()
    raw = np.minimum.accumulate(np.asarray(ranking.scores, dtype=np.float64))
    top = float(raw[0]) if raw[0] > 0 else 1.0
    rel = {d: float(s) / top for d, s in zip(docs, raw.tolist())}
    named = set(fixed)
    keep = max(keep, sum(1 for d in docs[:len(named)] if d in named))  # named tools stay first
    why: dict[int, Companion] = {}
    for a in docs[:anchors]:
        base = rel[a]
        per_kind: dict[int, dict[str, float]] = {}
        for c, kind, strength in graph.related(a):
            w = weights.get(kind, 0.0)
            if w <= 0 or c == a or (allowed is not None and not allowed[c]):
                continue
            got = per_kind.setdefault(c, {})
            got[kind] = max(got.get(kind, 0.0), w * strength * base)
        # the kinds add up (module doc); the explanation names the one that says most
        offered = {c: Companion(a, max(got, key=got.__getitem__), sum(got.values())) for c, got in per_kind.items()}
        # an anchor brings its few likeliest companions, not every tool its API lists
        best = sorted(offered.items(), key=lambda kv: (-(kv[1].evidence + rel.get(kv[0], 0.0)), kv[0]))[:per_anchor]
        for c, comp in best:
            if c not in why or comp.evidence > why[c].evidence:
                why[c] = comp
    head = docs[:keep]
    if used > 0 and graph.use is not None:  # the usage log at large (module doc): ranked tools only
        for d in docs[keep:]:
            u = used * float(graph.use[d])
            if u <= 0 or (allowed is not None and not allowed[d]):
                continue
            had = why.get(d)
            # it adds to an anchor's evidence; the explanation names the larger of the two
            if had is None or u > had.evidence:
                why[d] = Companion(-1, "used", u + (had.evidence if had else 0.0))
            else:
                why[d] = replace(had, evidence=had.evidence + u)
    if not why:
        return ranking, {}
    score = {d: rel.get(d, 0.0) + (why[d].evidence if d in why else 0.0) for d in set(docs) | set(why)}
    for c, comp in why.items():  # a tool stays above the companions it brought
        if comp.anchor >= 0:
            score[comp.anchor] = max(score[comp.anchor], score[c])
    kept = set(head)
    pos = {d: i for i, d in enumerate(docs)}
    pool = [d for d in dict.fromkeys(docs[keep:] + list(why)) if d not in kept]
    pool.sort(key=lambda d: (-score[d], pos.get(d, len(docs)), d))
    # scores stay non-increasing: a companion never outscores the places kept above it
    cap = float(raw[len(head) - 1]) if head else float("inf")
    new_scores = [float(raw[i]) for i in range(len(head))] + [min(cap, top * score[d]) for d in pool]
    order = head + pool
    # a companion is a tool the relations moved up (or brought in), not one that only kept its place
    placed = {d: i for i, d in enumerate(order)}
    moved = {d: c for d, c in why.items() if d in placed and placed[d] < pos.get(d, len(docs)) and d not in kept}
    return Ranking(np.array(order, dtype=np.int64), np.array(new_scores, dtype=np.float64)), moved
