"""The delta structures a live replica applies changes with: BM25 from term counts scores exactly
as a rebuild over the changed corpus, and the slotted dense index finds what a flat scan finds."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from apidb.loaders import load
from router import text as rtext
from router.index.dense_delta import SlotStore, SlottedIndex, place
from router.ranking.fusion import Ranking
from router.index.lexical import LexicalIndex
from router.index.lexical_delta import TermCounts
from tests.conftest import BUNDLED_GORILLA

QUERIES = ["classify sports activities in videos", "translate english text to french", "detect objects in images",
           "generate speech audio from text text", "segment"]


def counts_of(records) -> TermCounts:
    tc = TermCounts()
    for r in records:
        tc.set(r.id, rtext.record_tokens(r))
    return tc


def test_a_changed_bm25_scores_exactly_as_a_rebuild_and_as_bm25s():
    records = sorted(load(BUNDLED_GORILLA / "torchhub_api.jsonl").records + load(
        BUNDLED_GORILLA / "tensorflowhub_api.jsonl").records, key=lambda r: r.id)
    live = counts_of(records)
    removed = {r.id for r in records[::7]}
    changed = {r.id: r.__class__(**{**r.__dict__, "description": r.description + " now with zebra stripes"})
               for r in records[3::11] if r.id not in removed}
    added = [replace(r, id=r.id + "_copy", name=r.name + " copy") for r in records[:25]]
    for rid in removed:
        live.remove(rid)
    for r in list(changed.values()) + added:
        live.set(r.id, rtext.record_tokens(r))
    after = sorted([changed.get(r.id, r) for r in records if r.id not in removed] + added, key=lambda r: r.id)
    order = [r.id for r in after]
    delta, fresh = live.index(order), counts_of(after).index(order)
    bm25s = LexicalIndex.build([rtext.record_tokens(r) for r in after])
    for q in QUERIES + ["zebra stripes"]:
        tokens = rtext.tokenize(q)
        assert np.array_equal(delta.scores(tokens), fresh.scores(tokens)), q
        assert np.allclose(delta.scores(tokens), bm25s.scores(tokens), rtol=0, atol=1e-5), q
    assert delta.scores(rtext.tokenize("zebra stripes")).argmax() in {order.index(r) for r in changed}


def test_term_counts_survive_a_snapshot():
    records = load(BUNDLED_GORILLA / "torchhub_api.jsonl").records
    tc = counts_of(records)
    order = sorted(tc.docs)
    back, extra = TermCounts.from_bytes(tc.to_bytes(order, {"keys": [f"k{i}" for i in range(len(order))]}))
    assert extra["ids"] == order and extra["keys"][3] == "k3"
    for q in QUERIES:
        assert np.array_equal(back.index(order).scores(rtext.tokenize(q)), tc.index(order).scores(rtext.tokenize(q)))


def exact_top(vectors, live, q, n):
    sims = vectors[live] @ q
    top = np.lexsort((live, -sims))[:n]
    return live[top]


def test_the_slotted_index_finds_what_a_flat_scan_finds_across_changes():
    rng = np.random.default_rng(7)
    dim, n = 32, 400
    vecs = rng.normal(size=(n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    ids = [f"r{i:04d}" for i in range(n)]
    keys = [f"p{i}" for i in range(n)]
    store = SlotStore(dim, "flat")
    pos_slot, slots = place(store, keys, {}, dict(zip(keys, vecs)), ids)
    # a change: 40 records get new passages (new vectors), 10 have none yet, 30 go
    new = rng.normal(size=(40, dim)).astype(np.float32)
    new /= np.linalg.norm(new, axis=1, keepdims=True)
    keys2 = list(keys)
    for j, i in enumerate(range(0, 80, 2)):
        keys2[i] = f"q{i}"
    available = {**dict(zip(keys, vecs)), **{f"q{i}": new[j] for j, i in enumerate(range(0, 80, 2))}}
    for i in range(100, 110):
        keys2[i] = f"none{i}"
    keep = [i for i in range(n) if i < 370]
    ids2, keys2 = [ids[i] for i in keep], [keys2[i] for i in keep]
    pos_slot2, _ = place(store, keys2, slots, available, ids2)
    view = SlottedIndex(store, pos_slot2)
    truth = np.vstack([available.get(k, np.zeros(dim, np.float32)) for k in keys2])
    live = np.flatnonzero(view.has_vector)
    assert len(live) == len(ids2) - 10 and len(store) == n + 40  # old slots kept as tombstones
    for _ in range(20):
        q = rng.normal(size=dim).astype(np.float32)
        q /= np.linalg.norm(q)
        docs, _ = view.search(q, 10)
        assert docs.tolist() == exact_top(truth, live, q, 10).tolist()
        allowed = np.arange(50, 200)
        docs, _ = view.search(q, 5, allowed)
        assert docs.tolist() == exact_top(truth, np.intersect1d(live, allowed), q, 5).tolist()
    # the earlier view is untouched by the change (it keeps answering while the next one is built)
    old = SlottedIndex(store, pos_slot)
    assert old.search(vecs[5], 1)[0].tolist() == [5]


def test_bm25_stands_in_for_records_without_a_vector():
    store = SlotStore(4, "flat")
    vecs = np.eye(4, dtype=np.float32)
    pos_slot, _ = place(store, ["a", "b", "c", "d"], {}, {"a": vecs[0], "b": vecs[1], "c": vecs[2]}, list("wxyz"))
    view = SlottedIndex(store, pos_slot)  # "z" (position 3) has no vector
    lex = Ranking(np.array([3, 0]), np.array([9.0, 1.0], dtype=np.float32))
    dense = Ranking(np.array([0, 1]), np.array([0.9, 0.1], dtype=np.float32))
    filled = view.stand_in(lex, dense)
    got = dict(zip(filled.docs.tolist(), filled.scores.tolist()))
    assert got[3] == got[0] == np.float32(0.9) and len(got) == 3  # the best BM25 hit ranks with the best dense one
