"""`toolsift audit` refuses files that do not belong together, and names a file of the wrong kind
(issue 40): exit 2 and one error line, not a score."""
from __future__ import annotations

from pathlib import Path

from tests.support.cli import toolsift

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_responses_of_another_hub_are_an_error(gorilla_db):
    res = toolsift("audit", EXAMPLES / "torchhub_responses.jsonl", "--namespace", "huggingface", db=gorilla_db)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert res.stdout == "" and "Traceback" not in res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "'torchhub'" in last and "--namespace torchhub" in last, last
    # the same file with its own namespace scores as before
    ok = toolsift("audit", EXAMPLES / "torchhub_responses.jsonl", "--namespace", "torchhub",
                  "--gold", EXAMPLES / "torchhub_gold.jsonl", "--fail-on", "none", db=gorilla_db)
    assert ok.returncode == 0, ok.stderr
    # --allow-mismatch scores it anyway, with the reason among the warnings
    forced = toolsift("audit", EXAMPLES / "torchhub_responses.jsonl", "--namespace", "huggingface",
                      "--allow-mismatch", "--fail-on", "none", db=gorilla_db)
    assert forced.returncode == 0 and "'torchhub'" in forced.stderr, forced.stderr


def test_a_tool_calls_file_is_named_as_one(gorilla_db):
    res = toolsift("audit", EXAMPLES / "calls.jsonl", "--namespace", "torchhub", db=gorilla_db)
    assert res.returncode == 2, (res.stdout, res.stderr)
    line = res.stderr.strip()
    assert "\n" not in line and line.startswith("error: ") and "calls.jsonl" in line
    assert "tool-calls file" in line and "toolsift check" in line, line
