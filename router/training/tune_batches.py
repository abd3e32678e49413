"""Training batches whose in-batch negatives are the router's own confusions.

With in-batch negatives (MultipleNegativesRankingLoss) every other tool of a batch is a negative
of each query. Shuffled across a mixed catalog, those are mostly tools nobody would confuse (a
TorchHub vision model against a RapidAPI weather endpoint), and the encoder learns little from
them. Here each batch is grown from a seed pair by following the tools the base router ranks
highest for its queries without being right (its hard negatives): the pairs whose gold tool is
one of them join the batch, so the loss pushes apart exactly what the router mixes up. This
costs no extra passages per step, unlike a third (query, positive, negative) column.

A batch never holds a tool that is relevant to another query in it (it would be scored as a
negative of a right answer), nor the same tool or query text twice.
"""
from __future__ import annotations

import random
from collections import defaultdict
from typing import Sequence

from apidb.record import ApiRecord

Pair = tuple[str, int]  # (query text, index of its tool in the catalog)
MINED_DEPTH = 20  # router results read per training query for hard negatives


def mine_hard_negatives(records: Sequence[ApiRecord], queries: dict[str, set[int]], model: str,
                        depth: int = MINED_DEPTH) -> dict[str, list[int]]:
    """Per query text, the catalog indexes the router with the model being tuned (``model``, before
    training) ranks in its top ``depth`` that are not relevant to it, best first (hybrid, default
    settings, fixed k)."""
    from ..ranking.engine import Router

    router = Router(list(records), model=model)
    index = {r.id: i for i, r in enumerate(records)}
    out = {}
    for text, relevant in queries.items():
        ranked = router.select(text, k=depth, adaptive=False, split=False)
        out[text] = [index[s.record.id] for s in ranked if index[s.record.id] not in relevant]
    return out


def router_batches(pairs: Sequence[Pair], size: int, rng: random.Random,
                   hard: dict[str, list[int]], group: dict[int, str] | None = None) -> list[list[Pair]]:
    """Batches of up to ``size`` pairs, each grown along hard negatives (see the module doc).

    ``group`` (pair index → a label such as the source dataset) keeps batches within one group:
    the fill after the hard negatives run out then still comes from the same catalog."""
    relevant: dict[str, set[int]] = defaultdict(set)
    for q, i in pairs:
        relevant[q].add(i)
    by_tool: dict[int, list[int]] = defaultdict(list)
    for n, (_, i) in enumerate(pairs):
        by_tool[i].append(n)
    groups: dict[str, list[int]] = defaultdict(list)
    order = list(range(len(pairs)))
    rng.shuffle(order)
    for n in order:
        groups[(group or {}).get(n, "")].append(n)
    placed = [False] * len(pairs)
    batches: list[list[int]] = []
    for members in groups.values():
        for seed in members:
            if not placed[seed]:
                batches.append(_grow(seed, pairs, size, hard, relevant, by_tool, placed, members))
    # A group's last batches are its leftovers: pairs of its most frequent tools, which cannot
    # share a batch (1-4 pairs: a batch of one teaches nothing). They are batched again across groups.
    small = [n for b in batches if len(b) < size // 2 for n in b]
    batches = [b for b in batches if len(b) >= size // 2]
    for n in small:
        placed[n] = False
    for seed in small:
        if not placed[seed]:
            batches.append(_grow(seed, pairs, size, hard, relevant, by_tool, placed, small))
    rng.shuffle(batches)
    # a batch of one has no negative, so its loss is exactly 0: leaving it out saves a step
    return [[pairs[n] for n in b] for b in batches if len(b) > 1]


def _grow(seed: int, pairs: Sequence[Pair], size: int, hard: dict[str, list[int]],
          relevant: dict[str, set[int]], by_tool: dict[int, list[int]], placed: list[bool],
          fill: list[int]) -> list[int]:
    batch: list[int] = []
    tools: set[int] = set()
    texts: set[str] = set()
    banned: set[int] = set()  # tools relevant to a query of the batch

    def add(n: int) -> bool:
        q, i = pairs[n]
        if placed[n] or i in tools or q in texts or i in banned or relevant[q] & tools:
            return False
        batch.append(n)
        tools.add(i)
        texts.add(q)
        banned.update(relevant[q])
        placed[n] = True
        return True

    add(seed)
    frontier = list(hard.get(pairs[seed][0], ()))
    while frontier and len(batch) < size:
        tool = frontier.pop(0)
        for n in by_tool.get(tool, ()):
            if add(n):
                frontier.extend(hard.get(pairs[n][0], ()))
                break
    for n in fill:
        if len(batch) >= size:
            break
        add(n)
    return batch
