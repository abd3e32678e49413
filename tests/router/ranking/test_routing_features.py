"""Exact names, complete multi-part sets, adaptive k and abstention, with the real router on real
catalogs (docs/routing.md). BM25-only routers where the feature does not need the encoder."""
from __future__ import annotations

import json

import pytest

from router import Router
from router.ranking.adaptive_k import AdaptiveK
from router.ranking.coverage import clause_spans
from router.errors import RouterError
from router.ranking.exact_names import NameTable, name_parts
from tests.conftest import shared


def _bm25(records) -> Router:
    return Router.from_records(records, dense=False)


def _dataset(name: str, *files: str):
    from benchmarks.data.datasets import load_dataset, required_files

    for rel in files or required_files(name):
        shared(*rel.split("/"))
    return load_dataset(name)


# ---------------------------------------------------------------- exact names

def _spellings(name: str) -> list[str]:
    parts = name_parts(name)
    return [name, " ".join(parts), " ".join(p.title() for p in parts), "_".join(parts), ".".join(parts),
            parts[0] + "".join(p.title() for p in parts[1:])]


@pytest.mark.parametrize("dataset, pick", [
    ("livemcpbench", lambda r: f"{r.namespace}__{r.name}"),                # MCP server__tool
    ("bfcl_live_multiple", lambda r: r.name),                               # OpenAI function names (a.b)
    ("apibench_huggingface", lambda r: r.name),                             # Gorilla ids (org/model)
    ("stabletoolbench_G1_tool", lambda r: r.name),                          # ToolBench function names
    ("stabletoolbench_G1_tool", lambda r: f"{r.metadata['tool_name']} {r.metadata['api_name']}"),  # RapidAPI
])
def test_a_query_naming_a_tool_has_it_at_rank_1_in_every_spelling(dataset, pick):
    d = _dataset(dataset)
    router = _bm25(d.records)
    table = router.name_table()
    # tools whose name is distinctive and unique; the query also says what it is for, in the words of
    # ANOTHER tool's description, so the ranking without the name would pick that other tool
    named = [r for r in d.records[::7] if table.by_key.get("".join(name_parts(pick(r)))) == [d.records.index(r)]][:12]
    assert len(named) >= 5, dataset
    for rec, other in zip(named, named[1:] + named[:1]):
        purpose = " ".join(other.description.split()[:10])
        for spelling in _spellings(pick(rec)):
            top = router.select(f"please use {spelling} to {purpose}", k=3, method="bm25")
            assert top[0].record.id == rec.id and top[0].reason == "named", (spelling, [s.record.id for s in top])


def test_a_table_built_from_a_previous_tables_memo_is_the_table_built_from_scratch():
    """A live replica builds its next name table from the last one's memo (router.ranking.watch): a
    renamed record must answer to its new name only, a removed one to none, and every other
    record exactly as a table built from scratch says."""
    from dataclasses import replace

    d = _dataset("livemcpbench")
    records = list(d.records)
    first = NameTable(records)
    renamed = replace(records[3], name="zorblax_ledger_reconciler",  # a renamed tool gets a new id too
                      id=f"{records[3].namespace}/zorblax_ledger_reconciler")
    edited = replace(records[5], name="quuxify_widget_frobnicator")  # same id, new content: a new object
    changed = [renamed, records[4], edited] + records[6:]  # records[0:3] removed
    again = NameTable(changed, first.memo)
    scratch = NameTable(changed)
    assert again.by_key == scratch.by_key and again.starts == scratch.starts and again.longest == scratch.longest
    assert again.find("please run zorblax ledger reconciler now") == [0]
    old = "".join(name_parts(records[3].name))
    assert old not in again.by_key or again.by_key[old] != [0]
    assert again.find("then quuxify widget frobnicator") == [2]
    assert set(again.memo) == {r.id for r in changed}


def test_names_several_records_share_and_generic_words_name_nothing():
    d = _dataset("apibench_tensorflowhub")
    table = NameTable(d.records)
    shared_name = [r.name for r in d.records if r.name == "mobilenet_v2"]
    assert len(shared_name) >= 2  # two TF Hub models are called mobilenet_v2: it names neither
    assert table.find("extract features with MobileNet V2") == []
    mcp = _dataset("livemcpbench")
    assert NameTable(mcp.records).find("search the web for the weather") == []  # "search", "weather": words


def test_named_tool_respects_filters_and_counts_in_k():
    d = _dataset("livemcpbench")
    router = _bm25(d.records)
    rec = next(r for r in d.records if r.name == "get_current_stock_price")
    q = f"call {rec.namespace}__{rec.name} for AAPL"
    assert router.select(q, k=2, method="bm25")[0].record.id == rec.id
    others = [ns for ns in router.namespaces() if ns != rec.namespace]
    assert rec.id not in [s.record.id for s in router.select(q, k=5, method="bm25", include_namespaces=others)]


# ---------------------------------------------------------------- multi-part requests

def test_clause_spans_cut_sentences_and_connectives():
    q = ("Help me find a 7-letter word that starts with 'fru'. Additionally, fetch the income data for the "
         "ZIP code 98765 and then convert 100 USD to EUR")
    parts = [q[s:e] for s, e in clause_spans(q)]
    assert parts == ["Help me find a 7-letter word that starts with 'fru'.",
                     "fetch the income data for the ZIP code 98765", "convert 100 USD to EUR"]
    assert clause_spans("weather in Paris tomorrow") == []
    assert clause_spans("Hi! What is the weather in Paris tomorrow?") == []  # a greeting is not a part


def test_each_part_of_a_real_multi_tool_request_gets_its_tool(stb_router_full):
    """StableToolBench G2: the two tools of two sentences are both in the top 3 (coverage on); the
    request reads as two parts."""
    d = _dataset("stabletoolbench_G2_instruction")
    q = next(q for q in d.queries if q.text.startswith("Help me find a 7-letter word"))
    sel = stb_router_full.configured(coverage=0.4).select(q.text, k=3)
    assert sel.parts == 2
    assert q.relevant <= {s.record.id for s in sel}


# ---------------------------------------------------------------- adaptive k

def test_k_given_is_fixed_k_omitted_is_adaptive_with_a_ceiling(stb_router_full):
    d = _dataset("stabletoolbench_G1_instruction")
    q = d.queries[0].text
    fixed = stb_router_full.select(q, k=7)
    assert len(fixed) == 7 and fixed.adaptive_k is None
    auto = stb_router_full.select(q)
    assert 1 <= len(auto) <= stb_router_full.config.adaptive_ceiling and auto.adaptive_k == len(auto)
    capped = stb_router_full.select(q, k=3, adaptive=True)
    assert len(capped) <= 3
    strict = stb_router_full.select(q, k=10, adaptive=AdaptiveK(ratio=1.0))
    loose = stb_router_full.select(q, k=10, adaptive=AdaptiveK(ratio=0.0))
    assert len(strict) < len(loose) == 10
    assert len(stb_router_full.select(q, adaptive=False)) == 5  # the old default
    with pytest.raises(RouterError, match="ratio"):
        AdaptiveK(ratio=1.5)


def test_adaptive_cut_keeps_every_strong_tool_wherever_a_stage_ranked_it():
    import numpy as np

    cut = AdaptiveK(ratio=0.6)
    # a weak tool ranked second (a companion, a coverage pick) does not push the strong fifth one out
    assert cut.kept(np.array([1.0, 0.3, 0.9, 0.2, 0.7, 0.1]), 10).tolist() == [0, 2, 4]
    assert cut.cut(np.array([1.0, 0.3, 0.9, 0.2, 0.7, 0.1]), 10) == 3
    assert cut.kept(np.array([1.0, 0.3, 0.9, 0.2, 0.7]), 3).tolist() == [0, 2]  # within the ceiling only
    # never fewer than the floor: the first places not kept make it up
    assert AdaptiveK(ratio=0.6, floor=3).kept(np.array([1.0, 0.1, 0.2, 0.9]), 10).tolist() == [0, 1, 3]
    assert cut.kept(np.zeros(3), 10).tolist() == [0] and cut.kept(np.zeros(0), 10).tolist() == []


def test_adaptive_k_keeps_the_token_budget(stb_router_full):
    d = _dataset("stabletoolbench_G1_instruction")
    sel = stb_router_full.select(d.queries[1].text, token_budget=300)
    assert sel.budget.used <= 300 and sum(s.tokens for s in sel) == sel.budget.used


# ---------------------------------------------------------------- abstention

def _bfcl_entry(file: str, index: int):
    from apidb.loaders import load

    path = shared("bfcl", file)
    row = json.loads(path.read_text(encoding="utf-8").splitlines()[index])
    records = [r for r in load(path, format="bfcl").records if row["id"] in r.metadata.get("entries", [])]
    return row["question"][-1][-1]["content"], records


def test_an_irrelevant_question_abstains_an_answerable_one_does_not(emb_cache):
    """BFCL: 'roots of 3x^2 - 2x - 5' against a geographic distance calculator abstains; a question its
    function answers does not. abstain="empty" returns no ranked tool, and pinned tools stay."""
    text, recs = _bfcl_entry("BFCL_v4_irrelevance.json", 2)
    router = Router.from_records(recs, cache_dir=emb_cache)
    flagged = router.select(text, k=3)
    assert flagged.abstained and flagged.abstention.evidence < flagged.abstention.threshold
    assert len(flagged) == len(recs)  # flagged, not stripped
    assert router.select(text, k=3, abstain="empty") == []
    pinned = router.select(text, k=3, abstain="empty", pinned=[recs[0].id])
    assert [s.reason for s in pinned] == ["pinned"]
    text, recs = _bfcl_entry("BFCL_v4_simple_python.json", 0)
    answer = Router.from_records(recs, cache_dir=emb_cache).select(text, k=3)
    assert answer.abstention is not None and not answer.abstained
    with pytest.raises(RouterError, match="abstain"):
        router.select(text, abstain="strip")


def test_bm25_routing_never_abstains():
    text, recs = _bfcl_entry("BFCL_v4_irrelevance.json", 2)
    sel = _bm25(recs).select(text, k=3, method="bm25")
    assert sel.abstention is None and not sel.abstained


@pytest.fixture(scope="module")
def stb_router_full(emb_cache):
    """Hybrid over 400 real StableToolBench endpoints: the gold tools of the queries used here and
    the first others of the corpus (a 2,231-tool embedding would cost a minute per session)."""
    g1 = _dataset("stabletoolbench_G1_instruction")
    g2 = _dataset("stabletoolbench_G2_instruction")
    gold = set().union(*(q.relevant for q in g1.queries[:2]), *(q.relevant for q in g2.queries[:3]))
    records = [r for r in g1.records if r.id in gold] + [r for r in g1.records if r.id not in gold][:400 - len(gold)]
    return Router.from_records(records, cache_dir=emb_cache)
