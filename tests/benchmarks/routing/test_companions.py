"""The companions section of `toolsift bench routing` (benchmarks/routing/companions.py): the base
model's and the general encoder's cross-fitted rows, on real data."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import shared

TOOLSIFT = Path(sys.executable).with_name("toolsift")


class _Recorder:
    """Which router encoded which request (a router's clones share it: `Router.configured` copies it)."""

    def __init__(self, router, tag: str, seen: list[tuple[str, str]]) -> None:
        self.tag, self.seen = tag, seen
        self.queries, self.sentences = router.encode_queries, router.encode_query_sentences

    def encode(self, texts):
        self.seen.extend((self.tag, t) for t in texts)
        return self.queries(texts)

    def encode_sentences(self, query, spans, how):
        self.seen.append((self.tag, query))
        return self.sentences(query, spans, how)


@pytest.mark.slow
def test_cross_fit_ranks_each_half_with_the_routers_of_its_choice_and_scores_the_other_half():
    shared("restbench", "datasets", "tmdb.json")
    from benchmarks.data.datasets import load_dataset
    from benchmarks.data.halves import half_of
    from benchmarks.routing import companions as C
    from benchmarks.routing.common import routers

    d = load_dataset("restbench_tmdb")
    sets = {"restbench_tmdb": d}
    texts = {}
    for q in d.queries:
        texts.setdefault(q.text.strip(), set()).add(half_of(q.id, "restbench_tmdb"))  # as the router reads it
    seen: list[tuple[str, str]] = []
    by_half = {}
    for h in C.HALVES:  # two routers over the same catalog, told apart by what they encode
        rts = routers(sets, None)
        r = rts["restbench_tmdb"]
        rec = _Recorder(r, h, seen)
        r.encode_queries, r.encode_query_sentences = rec.encode, rec.encode_sentences
        by_half[h] = rts
    tables, scored, today, pooled = C.cross_fit(sets, by_half)
    # the choice on half h ranks h's requests with h's routers; the scoring, the other half's
    assert {c.half for c in pooled} == {"dev", "test"} and len(pooled) == len(scored) == len(d.queries)
    assert all(c.router is by_half[c.half]["restbench_tmdb"] for c in pooled)
    assert all(c.router is by_half[C.other_half(c.half)]["restbench_tmdb"] for c in scored)
    # each router ranked its own half (the choice) and the other (the scoring): every request met both
    by_router = {h: {t for tag, t in seen if tag == h and t in texts} for h in C.HALVES}
    assert by_router["dev"] == by_router["test"] == set(texts)
    multi = tables["today"]["restbench_tmdb|multi"]
    assert multi["n"] == sum(len(q.relevant) > 1 for q in d.queries)
    assert tables["new"]["restbench_tmdb|multi"]["all_gold@10"] >= multi["all_gold@10"]
    assert set(tables["chosen"]) == {"dev", "test"} and tables["shipped"] == tables["chosen"]["dev"]
    # the general encoder's rows: half h's choice ranked by the routers of the other half (a model that
    # did not train on h); the scoring as before
    choosers = {h: by_half[C.other_half(h)] for h in C.HALVES}
    _, scored_too, _, pooled_too = C.cross_fit(sets, by_half, choosers=choosers)
    assert all(c.router is by_half[C.other_half(c.half)]["restbench_tmdb"] for c in pooled_too)
    assert [(c.q.id, c.router) for c in scored_too] == [(c.q.id, c.router) for c in scored]


def test_the_kinds_the_records_say_are_weighed_without_co_use_and_co_use_on_top():
    shared("restbench", "datasets", "tmdb.json")
    shared("restbench", "datasets", "spotify.json")
    from benchmarks.data.datasets import load_dataset
    from benchmarks.routing import companions as C
    from benchmarks.routing.common import routers

    sets = {n: load_dataset(n) for n in ("restbench_tmdb", "restbench_spotify")}
    co = {h: C.learned(sets, {C.other_half(h)}) for h in C.HALVES}
    assert all(co[h].get(C.corpus(n)) for h in C.HALVES for n in sets)  # each half learned some co-use
    learned, cold = C.relation_graphs(sets, co), C.relation_graphs(sets, {h: {} for h in C.HALVES})
    cs = C.cases(sets, routers(sets, None))
    weights, keep, _ = C.choose(cs, learned, cold)
    without, _, _ = C.choose(cs, cold, cold)
    # the co-use learned from the labelled requests never moves the structural kinds' weights (chosen
    # together, it stood in for produces-for here: 0.3 instead of the 1.0 a catalog with no usage log
    # gets), and co-use is weighed on top of them
    assert {k: weights[k] for k in C.STRUCTURAL} == {k: without[k] for k in C.STRUCTURAL}
    assert without["co_use"] == 0 < weights["co_use"] and weights["produces_for"] > 0
    assert without["used"] == 0  # with no usage log, no tool is more used than another


@pytest.mark.slow
def test_cached_names_the_folder_train_finds_and_none_for_an_untrained_spec():
    shared("stabletoolbench_solvable", "test_instruction", "G2_instruction.json")
    from benchmarks.retrieval.general_training import cached, train

    assert cached("dev", per_dataset=7) is None  # no run ever trained 7 pairs per dataset
    folder = cached("dev")
    if folder is None:
        pytest.skip("the general encoder's dev-half model is not trained (`toolsift bench general-encoder`)")
    assert train("dev")[0] == folder and Path(folder, "config.json").is_file()


@pytest.mark.slow
def test_companions_section_prints_and_stores_the_general_encoders_cross_fitted_rows(tmp_path):
    shared("restbench", "datasets", "tmdb.json")
    shared("metatool", "data", "multi_tool_query_golden.json")
    from benchmarks.retrieval.general_training import cached

    if cached("dev") is None or cached("test") is None:
        pytest.skip("the general encoder's half models are not trained (`toolsift bench general-encoder`)")
    res = subprocess.run([str(TOOLSIFT), "bench", "routing", "--only", "companions", "--quick", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=1800, env={**os.environ, "COLUMNS": "200"})
    assert res.returncode == 0, res.stderr[-2000:]
    assert "general encoder" in res.stdout and "base model" in res.stdout
    c = json.loads((tmp_path / "results.json").read_text())["companions"]
    g = c["general"]
    assert {g["models"][h]["spec"] for h in ("dev", "test")} == {Path(cached(h)).name for h in ("dev", "test")}
    assert set(g["today"]) == set(c["today"]) and set(g["new"]) == set(c["new"])
    assert set(g["cost"]["new"]) == set(c["cost"]["new"])
    # the same requests, another encoder: the rankings differ somewhere
    assert any(g["today"][k]["ndcg@5"] != c["today"][k]["ndcg@5"] for k in c["today"])
    for k, v in g["new"].items():
        assert v["n"] == c["new"][k]["n"] and 0 <= v["all_gold@5"] <= v["all_gold@10"] <= 1
    # beside the new default: each part also ranked by its own vector, which never moves the first five
    hybrid = g["variants"]["part_signal hybrid"]["scores"]
    assert set(hybrid) == set(g["new"])
    assert all(abs(hybrid[k]["ndcg@5"] - v["ndcg@5"]) < 1e-9 for k, v in g["new"].items())
    # the part floor, then the tie, then the output file's part, then the relative date's, chosen on each
    # half after its weights from their grids; without the floor, the first five stay too
    from benchmarks.routing import part_floor, part_tie

    for h in ("dev", "test"):
        for name, grid in (("part_floor", part_floor.GRID), ("part_tie", part_tie.GRID),
                           ("output_file", (False, True)), ("relative_time", (False, True))):
            assert g["chosen"][h][name] in grid and set(g["chosen"][h][f"{name}_tried"]) == set(map(str, grid))
            assert name not in c["chosen"][h]  # the base model's rows choose none
    loose = g["variants"]["no part floor"]["scores"]
    assert all(abs(loose[k]["ndcg@5"] - v["ndcg@5"]) < 1e-9 for k, v in g["new"].items())
    # and the router as shipped with the general encoder in place of each half's choice (the base rows have none)
    shipped = g["variants"]["as shipped"]["scores"]
    assert set(shipped) == set(g["new"]) and "as shipped" not in c["variants"]
    assert all(abs(shipped[k]["ndcg@5"] - v["ndcg@5"]) < 1e-9 for k, v in g["new"].items())
    # each part's best two tools: the first five stay, and adaptive k sends every part's tools
    two = g["variants"]["2 tools per part"]
    assert set(two["scores"]) == set(two["cost"]) == set(g["new"])
    assert all(abs(two["scores"][k]["ndcg@5"] - v["ndcg@5"]) < 1e-9 for k, v in g["new"].items())
    assert sum(two["cost"][k]["tools"] for k in g["new"]) >= sum(v["tools"] for v in g["cost"]["new"].values())
    # and adaptive k without each part's own tool sent: never more tools than the default sends
    for table in (c, g):
        held = table["variants"]["part tools not sent by adaptive k"]["cost"]
        assert set(held) == set(table["cost"]["new"])
        assert all(held[k]["tools"] <= v["tools"] + 1e-9 for k, v in table["cost"]["new"].items())
    # where the missing gold tools are: every one below 10 or outside the top 60, once
    for f, row in g["misses"].items():
        assert g["new"][f"{f}|multi"]["n"] == row["requests"] >= row["incomplete"]
        assert row["missing"] >= row["incomplete"]
        assert row.get("ranked 11-60", 0) + row.get("outside the top 60", 0) == row["missing"]
        # a perfect re-ranking of places 6-10 completes every complete request and more the deeper it reaches
        top20, top30, top60 = (row["ceiling"][n] for n in ("20", "30", "60"))
        assert row["requests"] - row["incomplete"] <= top20 <= top30 <= top60 <= row["requests"]
    assert any(row["missing"] for row in g["misses"].values())
    report = (tmp_path / "report.md").read_text()
    assert "all gold sent, part tools not sent by adaptive k" in report
    assert "General encoder (the shipped default encoder), cross-fitted" in report
    assert "`today` = the router before issue 38 (companions and part tools off)" in report
    assert "Where the general encoder's missing gold tools are" in report
    assert "All gold @10 if places 6-10 took the gold tools of the top N" in report and "| top 30 |" in report
    assert "all gold @10, as shipped |" in report and "in place of each half's choice; on the dev half" in report
    assert report.count("| file | requests | n | nDCG@5 |") == 2
    # what each part setting scored on each half, the chosen value in bold, as results.json has it
    rows = [x for x in report.splitlines() if x.startswith(("| dev | ", "| test | "))]
    assert len(rows) == 2 and "| chosen on | part floor | part tie |" in report
    for h, row in zip(("dev", "test"), rows):
        floor = g["chosen"][h]["part_floor"]
        assert f"**{floor} {g['chosen'][h]['part_floor_tried'][str(floor)]:.4f}**" in row.split(" | ")[1]


@pytest.mark.parametrize("args, says", [
    (["--leave-out", "seal_tools"], "it goes with --only companions and no --model"),
    (["--only", "parts", "--leave-out", "seal_tools"], "it goes with --only companions and no --model"),
    (["--only", "companions", "--render", "--leave-out", "seal_tools"], "and no --model or --render"),
    (["--only", "companions", "--leave-out", "nosuchfamily"], "unknown family 'nosuchfamily' (choose from: livemcpbench, metatool"),
])
def test_leave_out_misuse_is_one_line_and_exit_2_before_any_work(tmp_path, args, says):
    res = subprocess.run([str(TOOLSIFT), "bench", "routing", *args, "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and says in res.stderr and res.stderr.count("\n") == 1, res.stderr
    assert not list(tmp_path.iterdir())  # nothing written


@pytest.mark.slow
def test_leave_out_scores_the_family_with_the_model_trained_without_it_and_keeps_the_other_rows(tmp_path):
    shared("stabletoolbench_solvable", "test_instruction", "G2_instruction.json")
    shared("restbench", "datasets", "tmdb.json")
    from benchmarks.retrieval.general_training import cached

    folder = cached(None, leave_out="stabletoolbench")
    if folder is None:
        pytest.skip("no general encoder trained without StableToolBench "
                    "(`toolsift bench routing --only companions --leave-out stabletoolbench`)")
    cmd = [str(TOOLSIFT), "bench", "routing", "--only", "companions", "--quick", "--leave-out", "stabletoolbench",
           "--out", str(tmp_path)]
    env = {**os.environ, "COLUMNS": "200"}
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    path = tmp_path / "results.json"
    rows = json.loads(path.read_text())["companions"]["general_lofo"]
    row = rows["stabletoolbench"]
    assert row["model"]["spec"] == Path(folder).name and row["model"]["trained_on"] == "every family but stabletoolbench"
    # only the left-out family's files are scored: 24 requests each (--quick), split by their gold tools
    files = {k.split("|")[0] for k in row["today"]}
    assert files and all(f.startswith("stabletoolbench_") for f in files)
    assert all(sum(v["n"] for k, v in row["today"].items() if k.split("|")[0] == f) == 24 for f in files)
    assert set(row["new"]) == set(row["today"]) == set(row["part_signal hybrid"]) == set(row["cost"]["new"]) \
        == set(row["shipped weights"])
    from benchmarks.routing.part_floor import GRID

    assert row["part_floor"] in GRID and set(row["part_floor_tried"]) == set(map(str, GRID))  # chosen without it
    for k in row["new"]:  # the first five never move, with either weights: nDCG@5 is today's
        for v in (row["new"][k], row["shipped weights"][k]):
            assert abs(v["ndcg@5"] - row["today"][k]["ndcg@5"]) < 1e-9 and 0 <= v["all_gold@5"] <= v["all_gold@10"] <= 1
    line = next(x for x in res.stdout.splitlines() if x.startswith("general encoder trained without stabletoolbench"))
    g2 = row["today"]["stabletoolbench_G2_instruction|multi"]["all_gold@10"]
    assert f"G2_instruction {g2:.3f} -> " in line
    report = (tmp_path / "report.md").read_text()
    assert "General encoder, leave one family out" in report and "| stabletoolbench |" in report
    assert "not run yet: livemcpbench, metatool, restbench, seal_tools" in report
    # what each part setting scored on the other families: the one chosen in bold, every other too
    lines = report.splitlines()
    table = lines[lines.index("| left out | part floor | part tie | an output file's part | a relative date's part |") + 2]
    assert table.startswith("| stabletoolbench | ")
    tie = row["part_tie"]
    assert f"**{tie} {row['part_tie_tried'][str(tie)]:.4f}**" in table.split(" | ")[2]
    assert table.count("**") == 8 and table.split(" | ")[1].count(", ") == len(GRID) - 1
    # a family's rows stay when another family's run comes after (each is half an hour of training)
    res_json = json.loads(path.read_text())
    res_json["companions"]["general_lofo"] = {"restbench": row}
    path.write_text(json.dumps(res_json))
    assert subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env).returncode == 0
    assert set(json.loads(path.read_text())["companions"]["general_lofo"]) == {"restbench", "stabletoolbench"}
    # and when the companions section itself runs again (its other tables, each family's rows kept)
    if cached("dev") is None or cached("test") is None:
        return  # the general encoder's half models, which that run scores with, are not trained here
    again = subprocess.run(cmd[:-4] + ["--out", str(tmp_path)], capture_output=True, text=True, timeout=1800, env=env)
    assert again.returncode == 0, again.stderr[-2000:]
    c = json.loads(path.read_text())["companions"]
    assert set(c["general_lofo"]) == {"restbench", "stabletoolbench"} and "general" in c and "chosen" in c
    report = (tmp_path / "report.md").read_text()
    assert "| restbench | " in report and "| stabletoolbench | " in report and "General encoder (the shipped" in report


@pytest.mark.slow
def test_leave_out_all_prints_the_cross_fitted_tables_and_then_every_family_in_one_run(tmp_path):
    shared("restbench", "datasets", "tmdb.json")
    shared("metatool", "data", "multi_tool_query_golden.json")
    from benchmarks.retrieval.general_training import cached
    from benchmarks.routing.general_lofo import FAMILIES

    res = subprocess.run([str(TOOLSIFT), "bench", "routing", "--only", "companions", "--quick", "--leave-out", "all",
                          "--out", str(tmp_path)], capture_output=True, text=True, timeout=1800,
                         env={**os.environ, "COLUMNS": "200"})
    assert res.returncode == 0, res.stderr[-2000:]
    out = res.stdout.splitlines()
    c = json.loads((tmp_path / "results.json").read_text())["companions"]
    assert "chosen" in c and c["command"].endswith("--only companions --leave-out all")
    # the cross-fitted summary first, then each family as it finishes; --quick never trains, so a
    # family with no model trained without it is named and passed over, not dropped in silence
    first = next(i for i, x in enumerate(out) if x.startswith("complete sets, cross-fitted"))
    rows = set(c.get("general_lofo", {}))
    passed = {f: x for f in FAMILIES for x in out if x.startswith(f"  passed over: --quick --leave-out {f}: ")
              or x.startswith(f"  passed over: --leave-out {f}: none of its files is here")}
    assert rows | set(passed) == set(FAMILIES) and not rows & set(passed)
    for fam in FAMILIES:
        if fam in rows:  # scored with a model an earlier run trained
            assert cached(None, leave_out=fam) is not None
            line = next(i for i, x in enumerate(out) if x.startswith(f"general encoder trained without {fam},"))
            assert line > first and c["general_lofo"][fam]["command"].endswith("--leave-out all")
        elif "no model trained without" in passed[fam]:
            assert cached(None, leave_out=fam) is None
    report = (tmp_path / "report.md").read_text()
    assert all(f"| {fam} | " in report for fam in rows) and "`--leave-out all`" in report
    assert ("not run yet" in report) == bool(passed)


@pytest.mark.parametrize("args, says", [
    (["--render"], "--render: no earlier run's results in"),
    (["--only", "curve"], "--only curve: no earlier run's results in"),
    (["--only", "speed"], "--only speed: no earlier run's results in"),
])
def test_sections_that_read_an_earlier_run_say_so_when_there_is_none(tmp_path, args, says):
    res = subprocess.run([str(TOOLSIFT), "bench", "routing", *args, "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and says in res.stderr and res.stderr.count("\n") == 1, res.stderr


def test_a_section_alone_needs_a_full_runs_coverage_choice(tmp_path):
    # a folder that only `--only companions` or `--only parts` wrote has no quality section to reuse
    (tmp_path / "results.json").write_text(json.dumps({"command": "toolsift bench routing --only parts",
                                                       "load_average": {"start": [0, 0, 0]}, "versions": {}}))
    res = subprocess.run([str(TOOLSIFT), "bench", "routing", "--only", "curve", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and "has no full run's sections (quality)" in res.stderr, res.stderr
    assert res.stderr.count("\n") == 1
