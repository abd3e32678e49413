"""`toolsift check` and `toolsift audit`, run as a user runs them (subprocess)."""
from __future__ import annotations

import json

from tests.checker.conftest import shared
from tests.support.cli import toolsift


def _lines(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_check_code_calls_and_bad_lines(tmp_path, gorilla_db):
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    lines = [
        {"id": "ok", "output": "<<<api_call>>>: pipeline('summarization', model='facebook/bart-large-cnn')",
         "gold": "pipeline('summarization', model='facebook/bart-large-cnn')"},
        {"id": "v9", "output": "pipeline('summarization', model='facebook/bart-large-cnn-v9')"},
        {"id": "prose", "output": "I do not know."},
        {"id": "json-ok", "calls": [{"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}],
         "functions": tools, "ground_truth": [{"get_weather": {"city": ["paris"]}}]},
        {"id": "json-bad", "calls": [{"name": "weather", "arguments": {"city": "Paris"}}], "functions": tools},
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    res = toolsift("check", src, "--namespace", "huggingface", db=gorilla_db)
    assert res.returncode == 1, res.stderr  # 3 of 5 answers are defective: the run fails (issue 14)
    assert "3 failing (exit 1)" in res.stderr
    out = {o.get("id") or f"line{o.get('line')}": o for o in _lines(res.stdout)}
    assert out["ok"]["verdict"] == "correct" and out["ok"]["api"].startswith("huggingface/")
    assert out["v9"]["verdict"] == "hallucinated" and "bart-large-cnn" in out["v9"]["defects"][0]["message"]
    assert out["prose"]["verdict"] == "unparsable"
    assert out["json-ok"]["verdict"] == "correct"
    assert out["json-bad"]["verdict"] == "hallucinated_tool" and out["json-bad"]["suggestions"] == ["get_weather"]
    assert "checked 5 line(s)" in res.stderr and "Traceback" not in res.stderr


def test_check_gorilla_mode_and_errors(tmp_path, gorilla_db):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": 1, "output": "<<<api_call>>>: hub.KerasLayer('https://tfhub.dev/google/imagenet/"
                                                  "mobilenet_v2_100_224/feature_vector/4'), <<<api_provider>>>: TF",
                               "gold": {"domain": "Image feature vector"}}) + "\n", encoding="utf-8")
    res = toolsift("check", src, "--namespace", "tensorflowhub", "--mode", "gorilla", db=gorilla_db)
    assert _lines(res.stdout)[0]["verdict"] == "correct", res.stderr
    bad = toolsift("check", src, "--mode", "loose", db=gorilla_db)
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and "Traceback" not in bad.stderr
    missing = toolsift("check", tmp_path / "nope.jsonl", db=gorilla_db)
    assert missing.returncode == 2 and "nope.jsonl" in missing.stderr


def test_audit_matches_the_library_and_writes_a_report(tmp_path):
    responses = shared("gorilla", "eval-data", "responses", "torchhub", "response_torchhub_Gorilla_FT_0_shot.jsonl")
    api = shared("gorilla", "api", "torchhub_api.jsonl")
    gold = shared("gorilla", "apibench", "torchhub_eval.json")
    res = toolsift("audit", responses, "--db", api, "--namespace", "torchhub", "--gold", gold,
                   "--mode", "gorilla", "--json", "--report", tmp_path / "rep")
    assert res.returncode == 1, res.stderr  # some answers are hallucinated: the audit fails
    fig = json.loads(res.stdout)
    assert fig["n"] == 186 and round(100 * fig["accuracy"], 2) == 75.81 and round(100 * fig["hallucination"], 2) == 16.13
    assert abs(fig["error"] - (1 - fig["accuracy"] - fig["hallucination"])) < 1e-9
    report = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    assert "## Verdicts" in report and "hallucinated identifiers" in report
    assert (tmp_path / "rep" / "verdicts.png").read_bytes()[:4] == b"\x89PNG"
    text = toolsift("audit", responses, "--db", api, "--namespace", "torchhub", "--gold", gold, "--fail-on", "none",
                    terminal=True)
    assert text.returncode == 0 and text.stdout.splitlines()[0].split() == ["n", "186"]
    assert [ln.split()[0] for ln in text.stdout.splitlines()[:5]] == ["n", "accuracy", "hallucination", "error",
                                                                      "verdicts"]
    # aligned: every figure starts in the same column (issue 40: the tab-separated block was ragged)
    assert len({ln.index(ln.split()[1]) for ln in text.stdout.splitlines()[:5]}) == 1


def test_audit_bad_files_are_one_line_errors(tmp_path, gorilla_db):
    bad = tmp_path / "r.jsonl"
    bad.write_text('{"question_id": 1, "text": "x"}\n{oops\n', encoding="utf-8")
    res = toolsift("audit", bad, "--namespace", "torchhub", db=gorilla_db)
    assert res.returncode == 2 and "line 2" in res.stderr and "Traceback" not in res.stderr
    good = tmp_path / "g.jsonl"
    good.write_text('{"question_id": 1, "text": "x"}\n', encoding="utf-8")
    res = toolsift("audit", good, "--namespace", "nosuch", db=gorilla_db)
    assert res.returncode == 2 and "nosuch" in res.stderr and "Traceback" not in res.stderr
