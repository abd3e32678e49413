"""benchmarks.data.datasets on the real shared data: counts recomputed here with plain json/csv."""
from __future__ import annotations

import csv
import json
import re
from collections import defaultdict

import pytest

from apidb.errors import ToolsiftError
from benchmarks.data import datasets as D
from tests.conftest import shared


def _jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _labels_resolve(ds: D.Dataset) -> None:
    ids = [r.id for r in ds.records]
    assert len(ids) == len(set(ids)), "record ids must be unique within a corpus"
    assert ds.queries, ds.name
    for q in ds.queries:
        assert q.relevant, (ds.name, q.id)
        assert q.relevant <= set(ids), (ds.name, q.id, q.relevant - set(ids))
        assert q.text.strip(), (ds.name, q.id)
    assert len({q.id for q in ds.queries}) == len(ds.queries), "query ids must be unique"


@pytest.mark.parametrize("hub,ev", [("torchhub", "torchhub"), ("tensorflowhub", "tensorflow"),
                                    ("huggingface", "huggingface")])
def test_apibench(hub, ev):
    api = _jsonl(shared("gorilla", "api", f"{hub}_api.jsonl"))
    rows = _jsonl(shared("gorilla", "apibench", f"{ev}_eval.json"))
    ds = D.load_dataset(f"apibench_{hub}")
    assert len(ds.records) == len({r["api_call"].strip() for r in api})  # 94 / 80 / 895 (deduplicated)
    squash = lambda s: re.sub(r"\s+", "", s)  # noqa: E731
    calls = {squash(r["api_call"]) for r in api}
    exact = sum(squash(r["api_call"]) in calls for r in rows)
    # every exact match is a query; the rest are resolved by api_name or dropped, and the notes say how many
    assert exact <= len(ds.queries) <= len(rows)
    if len(ds.queries) < len(rows):
        assert any("dropped" in n for n in ds.notes)
    if hub != "huggingface":
        assert len(ds.queries) == len(rows)  # 186 / 688: every gold call is in the database verbatim
    by_id = {r.id: r for r in ds.records}
    q1 = next(q for q in ds.queries if q.id == "1")
    assert squash(by_id[next(iter(q1.relevant))].call) == squash(rows[0]["api_call"])
    assert q1.meta["domain"] == rows[0]["api_data"]["domain"]
    assert q1.relevant <= q1.meta["domain_relevant"]
    assert "###" not in q1.text and "Output" not in q1.text
    _labels_resolve(ds)


def test_stabletoolbench_union_corpus():
    files = {g: json.loads(shared("stabletoolbench_solvable", "test_instruction", f"{g}.json").read_text())
             for g in D.STB_FILES}
    union = {(a["category_name"].strip(), a["tool_name"].strip(), a["api_name"].strip())
             for qs in files.values() for q in qs for a in q["api_list"]}
    assert len(union) == 2231
    for g, qs in files.items():
        ds = D.load_dataset(f"stabletoolbench_{g}")
        assert len(ds.records) == len(union)
        assert len(ds.queries) == len(qs)  # 163 / 153 / 158 / 106
        _labels_resolve(ds)
        by_id = {r.id: r for r in ds.records}
        for q, raw in zip(ds.queries, qs):
            gold = {(t.strip(), a.strip()) for t, a in raw["relevant APIs"]}
            got = {(by_id[i].metadata["tool_name"], by_id[i].metadata["api_name"]) for i in q.relevant}
            assert got == gold, q.id


def test_metatool():
    des = json.loads(shared("metatool", "plugin_des.json").read_text())
    per_tool = defaultdict(set)
    with shared("metatool", "data", "all_clean_data.csv").open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            per_tool[row["Tool"]].add(row["Query"])
    single = D.load_dataset("metatool_single")
    assert len(single.records) == len(des) == 199
    assert len(single.queries) == sum(min(D.METATOOL_PER_TOOL, len(v)) for v in per_tool.values())
    _labels_resolve(single)
    multi = D.load_dataset("metatool_multi")
    gold = json.loads(shared("metatool", "data", "multi_tool_query_golden.json").read_text())
    assert len(multi.queries) == len(gold) == 497
    assert all(len(q.relevant) == 2 for q in multi.queries)
    _labels_resolve(multi)
    assert D.load_dataset("metatool_single").queries[0].id == single.queries[0].id  # deterministic sample


@pytest.mark.parametrize("api,ops,bad", [("tmdb", 54, "GET /person/{movie_id}/movie_credits"),
                                         ("spotify", 40, "GET /track/{id}")])
def test_restbench(api, ops, bad):
    spec = json.loads(shared("restbench", "specs", f"{api}_oas.json").read_text())
    n_ops = sum(m in ("get", "post", "put", "delete", "patch") for item in spec["paths"].values() for m in item)
    rows = json.loads(shared("restbench", "datasets", f"{api}.json").read_text())
    ds = D.load_dataset(f"restbench_{api}")
    assert len(ds.records) == n_ops == ops
    assert len(ds.queries) == len(rows)
    assert any(bad in n and "dropped" in n for n in ds.notes)
    by_id = {r.id: r for r in ds.records}
    for q, row in zip(ds.queries, rows):
        want = {" ".join(s.split()) for s in row["solution"]} - {bad}
        assert {f"{by_id[i].metadata['method']} {by_id[i].metadata['path']}" for i in q.relevant} == want
    _labels_resolve(ds)


def test_livemcpbench_exact_names_only():
    servers = json.loads(shared("livemcpbench", "tools.json").read_text())
    names = {t["name"] for s in servers for b in s["tools"].values() for t in b["tools"]}
    n_tools = sum(len(b["tools"]) for s in servers for b in s["tools"].values())
    ann = json.loads(shared("livemcpbench", "all_annotations.json").read_text())
    mentions = [re.sub(r"^\s*\d+[.)]\s*", "", line).strip()
                for a in ann for line in a["Annotator Metadata"]["Tools"].splitlines()]
    mentions = [m for m in mentions if m]
    unusable = [m for m in mentions if m not in names]
    ds = D.load_dataset("livemcpbench")
    assert len(ds.records) == n_tools == 527
    assert len(mentions) == 256 and len(unusable) == 5
    assert any(f"{len(unusable)} unusable" in n for n in ds.notes)
    assert len(ds.queries) == sum(any(m in names for m in _mentions(a)) for a in ann)
    _labels_resolve(ds)


def _mentions(a):
    return [re.sub(r"^\s*\d+[.)]\s*", "", x).strip() for x in a["Annotator Metadata"]["Tools"].splitlines()]


def test_seal_tools():
    tools = _jsonl(shared("seal_tools", "tool.jsonl"))
    test = _jsonl(shared("seal_tools", "test_in_domain.jsonl")) + _jsonl(shared("seal_tools", "test_out_domain.jsonl"))
    ds = D.load_dataset("seal_tools")
    assert len(ds.records) == len(tools) == 4076
    assert len(ds.queries) == len(test) == 700 + 654
    names = {r.id: r.name for r in ds.records}
    for q, row in zip(ds.queries, test):
        assert {names[i] for i in q.relevant} == {c["api"] for c in row["calling"]}
    _labels_resolve(ds)


def test_bfcl_live_multiple():
    rows = _jsonl(shared("bfcl", "BFCL_v4_live_multiple.json"))
    answers = _jsonl(shared("bfcl", "possible_answer", "BFCL_v4_live_multiple.json"))
    docs = {json.dumps(f, sort_keys=True) for r in rows for f in r["function"]}
    ds = D.load_dataset("bfcl_live_multiple")
    assert len(ds.records) == len(docs)
    assert len(ds.queries) == len(rows) == 1053
    by_id = {r.id: r for r in ds.records}
    for q, a in zip(ds.queries, answers):
        assert [by_id[i].name for i in q.relevant] == [next(iter(a["ground_truth"][0]))]
        assert q.relevant <= q.meta["candidates"]
    _labels_resolve(ds)


def test_names_and_errors(tmp_path, monkeypatch):
    assert len(D.DATASETS) == 14
    with pytest.raises(ToolsiftError, match="unknown dataset 'nope'"):
        D.load_dataset("nope")
    monkeypatch.setenv("TOOLSIFT_SHARED_DATA", str(tmp_path))
    assert D.data_root() == tmp_path
    assert not D.available("seal_tools")
    with pytest.raises(D.DatasetError, match="missing .*tool.jsonl.*TOOLSIFT_SHARED_DATA"):
        D.load_dataset("seal_tools")
