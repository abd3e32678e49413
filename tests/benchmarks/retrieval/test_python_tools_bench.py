"""`toolsift bench retrieval --tools MODULE:ATTR`: a registry of Python functions is scored like a catalog,
and scores exactly as the same tools loaded from JSON (`catalog add` + `--db`)."""
from __future__ import annotations

import json

from tests.support.cli import toolsift
from tests.support.python_tools import bfcl_python_tools

METHODS = "bm25,hybrid_wsum"


def _figures(out) -> dict:
    res = json.loads((out / "results.json").read_text())
    (ds,) = res["datasets"].values()
    return {m: (r["metrics"], r["recall_curve"]) for m, r in ds["methods"].items()}, ds["n_records"], ds["n_queries"]


def test_python_functions_score_as_the_same_tools_from_json(tmp_path):
    tools = bfcl_python_tools(str(tmp_path))
    queries = tmp_path / "queries.jsonl"
    queries.write_text("".join(json.dumps(q) + "\n" for q in tools.queries))
    db = tmp_path / "catalog.db"
    assert toolsift("catalog", "add", tools.tools_json, "--namespace", "python", db=db).returncode == 0
    common = ["bench", "retrieval", "--queries", queries, "--methods", METHODS, "--max-queries", "80"]
    env = {"PYTHONPATH": str(tmp_path)}  # the functions' module, as a user's own package would be
    runs = {}
    for how, extra in (("python", ["--tools", "bfcl_tools:TOOLS"]), ("json", ["--db", db])):
        out = tmp_path / how
        proc = toolsift(*common, *extra, "--out", out, env=env)
        assert proc.returncode == 0, proc.stderr
        runs[how] = _figures(out)
    figures, n_records, n_queries = runs["python"]
    assert n_records == len(tools.functions) >= 200 and n_queries == 80
    assert set(figures) >= {"bm25", "hybrid_wsum"} and figures["hybrid_wsum"][0]["recall@5"] > 0.5
    assert runs["python"] == runs["json"]


def test_tools_without_queries_or_with_db_is_one_line(tmp_path):
    for args, msg in ((["--tools", "x:Y"], "--tools and --queries go together"),
                      (["--tools", "x:Y", "--db", tmp_path / "c.db"], "two sources of tools"),
                      (["--tools", "no_such_mod_q:T", "--queries", tmp_path / "q.jsonl"], "cannot import")):
        proc = toolsift("bench", "retrieval", *args)
        assert proc.returncode == 2 and msg in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
