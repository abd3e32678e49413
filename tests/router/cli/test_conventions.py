"""The command-line conventions of issue 14, on the installed console script in a subprocess
(the in-process runner never saw the tracebacks a user got): usage errors, --version,
completion, --db / $TOOLSIFT_DB, terminal vs pipe output, exit codes, stdin inputs."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.checker.conftest import shared
from tests.support.cli import toolsift


def _usage_error(res, command: str, error: str) -> None:
    """click's three lines: Usage / Try '... --help' / Error, exit 2, no traceback."""
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr + res.stdout
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert lines[0].startswith(f"Usage: toolsift {command}".rstrip()), res.stderr
    assert lines[1] == f"Try 'toolsift {command} --help' for help.".replace("toolsift  ", "toolsift "), res.stderr
    assert lines[2].startswith("Error: ") and error in lines[2], res.stderr
    assert len(lines) == 3, res.stderr


@pytest.mark.parametrize("args, command, error", [
    (["route", "hi", "--topk", "3"], "route", "No such option: --topk"),
    (["route", "hi", "-k", "abc"], "route", "Invalid value for '-k'"),
    (["catalog", "add"], "catalog add", "Missing argument"),
    (["check", "x.jsonl", "--nope"], "check", "No such option: --nope"),
    (["audit"], "audit", "Missing argument"),
    (["nosuchcommand"], "", "No such command 'nosuchcommand'"),
])
def test_usage_errors_are_three_lines_and_exit_2(args, command, error):
    _usage_error(toolsift(*args), command, error)


@pytest.mark.parametrize("args", [[], ["catalog"], ["serve"], ["cache"]])
def test_a_group_without_a_command_shows_its_help_and_exits_2(args):
    res = toolsift(*args)
    assert res.returncode == 2 and "Traceback" not in res.stderr + res.stdout
    assert f"Usage: toolsift {' '.join(args)}".rstrip() in res.stdout + res.stderr


def test_version_and_completion():
    from importlib.metadata import version

    res = toolsift("--version")
    assert res.returncode == 0 and res.stdout.strip() == f"toolsift {version('toolsift')}"
    # typer detects the shell from the parent process, as when a user types it in bash
    # (under make or CI the parent is sh, which typer does not support; `; exit` keeps bash
    # from exec-ing the script in its own place)
    script = Path(sys.executable).with_name("toolsift")
    comp = subprocess.run(["bash", "-c", f"'{script}' --show-completion; exit $?"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert comp.returncode == 0, comp.stderr
    assert "complete" in comp.stdout and "_TOOLSIFT_COMPLETE" in comp.stdout


def test_check_exits_1_on_defective_calls_and_fail_on_chooses(tmp_path, gorilla_db):
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(x) for x in [
        {"id": "ok", "output": "pipeline('summarization', model='facebook/bart-large-cnn')"},
        {"id": "v9", "output": "pipeline('summarization', model='facebook/bart-large-cnn-v9')"},
        {"id": "prose", "output": "I do not know."},
    ]) + "\n", encoding="utf-8")
    ns = ("--namespace", "huggingface")
    assert toolsift("check", src, *ns, db=gorilla_db).returncode == 1
    assert toolsift("check", src, *ns, "--fail-on", "none", db=gorilla_db).returncode == 0
    assert toolsift("check", src, *ns, "--fail-on", "hallucinated", db=gorilla_db).returncode == 1
    assert toolsift("check", src, *ns, "--fail-on", "wrong_api", db=gorilla_db).returncode == 0
    bad = toolsift("check", src, *ns, "--fail-on", "bogus", db=gorilla_db)
    assert bad.returncode == 2 and bad.stderr.strip().startswith("error: --fail-on: unknown verdict 'bogus'")
    # a pipe gets JSON Lines, a terminal a table; --json forces JSON at a terminal too
    piped = toolsift("check", src, *ns, db=gorilla_db)
    assert [json.loads(x)["verdict"] for x in piped.stdout.splitlines()] == ["valid", "hallucinated", "unparsable"]
    table = toolsift("check", src, *ns, db=gorilla_db, terminal=True)
    assert "verdict" in table.stdout and "hallucinated" in table.stdout and not table.stdout.startswith("{")
    forced = toolsift("check", src, *ns, "--json", db=gorilla_db, terminal=True)
    assert json.loads(forced.stdout.splitlines()[0])["id"] == "ok"


def test_db_follows_toolsift_db_in_every_command(tmp_path, gorilla_db):
    env = {"TOOLSIFT_DB": str(gorilla_db)}
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": 1, "output": "pipeline('summarization', model='facebook/bart-large-cnn')"})
                   + "\n", encoding="utf-8")
    assert toolsift("check", src, "--namespace", "huggingface", env=env).returncode == 0
    responses = shared("gorilla", "eval-data", "responses", "torchhub", "response_torchhub_Gorilla_FT_0_shot.jsonl")
    audit = toolsift("audit", responses, "--namespace", "torchhub", "--fail-on", "none", env=env)
    assert audit.returncode == 0 and json.loads(audit.stdout)["n"] == 186, audit.stderr
    stats = toolsift("catalog", "stats", env=env)
    assert json.loads(stats.stdout)["records"] == 1069
    doctor = toolsift("doctor", env=env)
    assert str(gorilla_db) in doctor.stdout and json.loads(doctor.stdout)["ok"] is True


def test_audit_without_gold_says_na_and_explains(gorilla_db):
    responses = shared("gorilla", "eval-data", "responses", "torchhub", "response_torchhub_Gorilla_FT_0_shot.jsonl")
    res = toolsift("audit", responses, "--namespace", "torchhub", "--fail-on", "none", db=gorilla_db, terminal=True)
    assert res.returncode == 0, res.stderr
    assert "accuracy       n/a" in res.stdout and "None" not in res.stdout
    assert "How it is scored: strict" in res.stdout and "--mode gorilla" in res.stdout


def test_audit_refuses_a_gold_file_of_another_hub(gorilla_db):
    responses = shared("gorilla", "eval-data", "responses", "torchhub", "response_torchhub_Gorilla_FT_0_shot.jsonl")
    gold = shared("gorilla", "apibench", "huggingface_eval.json")
    res = toolsift("audit", responses, "--namespace", "torchhub", "--gold", gold, db=gorilla_db)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "gold answers checked are APIs of namespace 'torchhub'" in res.stderr
    assert "warning: 186 responses for 911 gold answers" in res.stderr


def test_catalog_show_is_indented_on_a_terminal_and_one_line_on_a_pipe(gorilla_db):
    rid = json.loads(toolsift("catalog", "list", "--namespace", "torchhub", "--limit", "1", db=gorilla_db).stdout)[0]["id"]
    pretty = toolsift("catalog", "show", rid, db=gorilla_db, terminal=True)
    assert pretty.stdout.startswith("{\n  ") and json.loads(pretty.stdout)["id"] == rid
    piped = toolsift("catalog", "show", rid, db=gorilla_db)
    assert len(piped.stdout.strip().splitlines()) == 1 and json.loads(piped.stdout)["id"] == rid


def test_80_column_tables_never_break_an_id(gorilla_db):
    res = toolsift("catalog", "list", "--namespace", "huggingface", "--limit", "40", db=gorilla_db,
                   terminal=True, env={"COLUMNS": "80"})
    ids = [r["id"] for r in json.loads(toolsift("catalog", "list", "--namespace", "huggingface", "--limit", "40",
                                                db=gorilla_db).stdout)]
    assert res.returncode == 0
    # a line wider than 80 is one whole word: an id (or name) wider than the terminal itself
    assert all(len(line) <= 80 or len(line.split()) == 1 for line in res.stdout.splitlines())
    assert any(len(rid) > 40 for rid in ids)
    for rid in ids:  # whole, on one line, however long (issue 40)
        assert rid in res.stdout.split(), rid


def test_route_reads_queries_and_messages_from_stdin(gorilla_db):
    queries = "\n".join(json.dumps({"id": f"q{i}", "query": q}) for i, q in
                        enumerate(["summarize news articles", "classify sports in videos"])) + "\n"
    res = toolsift("route", "--queries", "-", "--method", "bm25", "-k", "2", db=gorilla_db, stdin=queries)
    assert res.returncode == 0, res.stderr
    lines = [json.loads(x) for x in res.stdout.splitlines()]
    assert [x["id"] for x in lines] == ["q0", "q1"] and all(len(x["tools"]) == 2 for x in lines)
    convo = json.dumps([{"role": "user", "content": "I need to classify sports activities in videos"},
                        {"role": "assistant", "content": "Which hub?"}, {"role": "user", "content": "PyTorch Hub"}])
    res = toolsift("route", "--messages", "-", "--method", "bm25", "-k", "3", db=gorilla_db, stdin=convo)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert len(out["tools"]) == 3 and any(t["namespace"] == "torchhub" for t in out["tools"])
    bad = toolsift("route", "--messages", "-", db=gorilla_db, stdin="{not json")
    assert bad.returncode == 2 and bad.stderr.strip().startswith("error: <stdin>:")


def test_route_token_budget_shows_tokens_and_what_it_dropped(gorilla_db):
    q = "summarize long English news articles"
    plain = json.loads(toolsift("route", q, "--method", "bm25", "-k", "5", db=gorilla_db).stdout)["tools"]
    res = toolsift("route", q, "--method", "bm25", "-k", "5", "--token-budget", "400", db=gorilla_db)
    out = json.loads(res.stdout)
    budget = out["budget"]
    assert budget["limit"] == 400 and budget["used"] == sum(t["tokens"] for t in out["tools"]) <= 400
    cut = budget["cut"]
    top_ids = {t["id"] for t in plain}
    assert all(t["id"] in top_ids or t["score"] >= cut for t in out["tools"])  # never below the relevance cut
    assert {d["id"] for d in budget["dropped"]} <= top_ids and all("does not fit" in d["reason"]
                                                                   for d in budget["dropped"])
    if budget["dropped"]:
        assert "dropped" in res.stderr
    table = toolsift("route", q, "--method", "bm25", "-k", "5", "--token-budget", "400", db=gorilla_db,
                     terminal=True)
    assert "tokens" in table.stdout and f"{budget['used']} of the budget of 400" in table.stdout


def test_tune_and_bench_retrieval_read_toolsift_db_too(tmp_path):
    missing = tmp_path / "from-env.db"
    env = {"TOOLSIFT_DB": str(missing)}
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "1", "query": "x", "relevant": ["y"]}) + "\n", encoding="utf-8")
    for args in (("tune", "--queries", queries, "--out", tmp_path / "tuned"),
                 ("bench", "retrieval", "--queries", queries, "--out", tmp_path / "bench")):
        res = toolsift(*args, env=env)
        assert res.returncode == 2 and "Traceback" not in res.stderr, (args, res.stderr)
        assert res.stderr.startswith("error: ") and str(missing) in res.stderr, (args, res.stderr)


def test_matched_terms_are_content_words_with_fields(gorilla_db):
    q = "What's going on: I'd like one model from torch hub to classify sports videos"
    out = json.loads(toolsift("route", q, "--method", "bm25", "-k", "3", db=gorilla_db).stdout)
    for tool in out["tools"]:
        words = set(tool["matched_terms"])
        assert words and not words & {"s", "going", "from", "one", "like", "i", "d", "what"}, words
        assert set(tool["matched_fields"]) == words
        assert all(set(f) <= {"name", "namespace", "description", "params", "tags", "call"}
                   for f in tool["matched_fields"].values())
