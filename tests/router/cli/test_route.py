"""`toolsift index` / `toolsift route` exactly as the issue specifies them."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from router.cli import app, main

runner = CliRunner()
TOOLSIFT = [sys.executable, "-c", "from router.cli import main; main()"]


def run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.run([*TOOLSIFT, *args], capture_output=True, text=True, env=env, timeout=120)


def test_index_then_route_json(hub_db):
    res = runner.invoke(app, ["index", "--db", str(hub_db), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["records"] == 94
    res = runner.invoke(app, ["route", "classify sports activities in videos", "--db", str(hub_db), "-k", "3",
                              "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["method"] == "hybrid" and len(out["tools"]) == 3 and out["warnings"] == []
    t = out["tools"][0]
    assert {"id", "name", "namespace", "score", "call", "rank", "reason", "bm25_score", "matched_terms",
            "dense_score"} <= t.keys()
    assert t["id"].startswith("torchhub/") and t["call"].startswith("torch.hub.load(")
    table = runner.invoke(app, ["route", "object detection", "--db", str(hub_db), "--method", "bm25"])
    assert table.exit_code == 0 and "torchhub/" in table.stdout


def test_route_queries_file(hub_db, tmp_path):
    runner.invoke(app, ["index", "--db", str(hub_db)])
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("\n".join(json.dumps(x) for x in [
        {"id": "q1", "query": "detect objects in street photos"},
        {"id": "q2", "messages": [{"role": "user", "content": "segment brain MRI scans"}]},
        {"id": "q3", "query": ""},
    ]) + "\n")
    res = runner.invoke(app, ["route", "--queries", str(qfile), "--db", str(hub_db), "-k", "2", "--method", "dense"])
    assert res.exit_code == 0, res.output
    lines = [json.loads(line) for line in res.stdout.splitlines()]
    assert [x["id"] for x in lines] == ["q1", "q2", "q3"]
    assert len(lines[0]["tools"]) == 2 and lines[0]["tools"][0]["rank"] == 1
    assert any("unet" in t["call"] for t in lines[1]["tools"])
    assert lines[2]["tools"] == [] and "empty query" in lines[2]["error"]


def test_route_without_index_says_bm25_only(gorilla_db):
    res = run("route", "translate english to french", "--db", str(gorilla_db), "-k", "2", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["method"] == "bm25" and len(out["tools"]) == 2
    assert "warning: no index" in res.stderr and "dense search off" in res.stderr


def test_bad_input_exits_2_with_one_line(gorilla_db, tmp_path, monkeypatch, capsys):
    cases = [
        (["route", "", "--db", str(gorilla_db)], "empty query"),
        (["route", "x", "--db", str(gorilla_db), "-k", "0"], "positive integer"),
        (["route", "x", "--db", str(gorilla_db), "--namespace", "nope"], "unknown namespace"),
        (["route", "x", "--db", str(tmp_path / "missing.db")], "missing.db"),
        (["route", "--queries", str(tmp_path / "nofile.jsonl"), "--db", str(gorilla_db)], "nofile.jsonl"),
        (["route", "--db", str(gorilla_db)], "give one of a QUERY argument, --queries"),
    ]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "query": "ok"}\nnot json\n')
    cases.append((["route", "--queries", str(bad), "--db", str(gorilla_db)], "line 2: not JSON"))
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b'\xff\xfe{"id": "a"}\n')
    cases.append((["route", "--queries", str(binary), "--db", str(gorilla_db)], "not UTF-8"))
    for args, needle in cases:  # in-process through the real entry point (exit code and stderr)
        monkeypatch.setattr(sys, "argv", ["toolsift", *args])
        with pytest.raises(SystemExit) as exc:
            main()
        err = capsys.readouterr().err
        assert exc.value.code == 2, (args, err)
        assert needle in err and "Traceback" not in err
        assert err.strip().splitlines()[-1].startswith("error: ")


def test_route_fuses_at_the_general_encoders_depth_and_the_base_model_at_100(hub_db, tmp_path):
    """The default model fuses each retriever's top 50 (router.ranking.config.GENERAL_ENCODER_DEPTH), the
    untuned MiniLM its top 100. On this 94-tool catalog the two depths rank some requests
    differently; the installed command must route as the library's default does."""
    from router import Router
    from router.ranking.config import GENERAL_ENCODER_DEPTH
    from router.encoders.model import BASE_MODEL

    from tests.conftest import shared
    from tests.support.cli import toolsift

    shared("gorilla", "apibench", "torchhub_eval.json")
    from benchmarks.data.datasets import load_dataset

    queries = load_dataset("apibench_torchhub").queries[:60]
    assert toolsift("index", db=hub_db).returncode == 0
    router = Router.open(hub_db)
    assert router.config.depth == GENERAL_ENCODER_DEPTH == 50
    assert Router(router.records, model=BASE_MODEL).config.depth == 100  # no vectors needed to ask

    def top5(r: Router) -> dict[str, list[str]]:
        return {q.id: [s.record.id for s in r.select(q.text, k=5)] for q in queries}

    at50, at100 = top5(router), top5(router.configured(depth=100))
    assert at50 != at100  # otherwise this catalog cannot tell the depths apart
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps({"id": q.id, "query": q.text}) + "\n" for q in queries))
    res = toolsift("route", "--queries", qfile, "-k", "5", db=hub_db)
    assert res.returncode == 0, res.stderr
    cli = {x["id"]: [t["id"] for t in x["tools"]] for x in map(json.loads, res.stdout.splitlines())}
    assert cli == at50
