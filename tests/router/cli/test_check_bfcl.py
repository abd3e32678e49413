"""`toolsift check|audit --mode bfcl`, run as a user runs them (the installed script, in a subprocess)."""
from __future__ import annotations

import gzip
import json

import pytest

from tests.checker.conftest import shared
from tests.support.cli import toolsift


@pytest.fixture(scope="module")
def dev_lines():
    """Every 200th official output (all categories), as dev.jsonl.gz has them."""
    with gzip.open(shared("bfcl_official", "dev.jsonl.gz"), "rt", encoding="utf-8") as f:
        lines = f.read().splitlines()
    return lines[::200]


def test_check_bfcl_mode_reproduces_the_official_verdicts(tmp_path, dev_lines):
    src = tmp_path / "dev.jsonl"
    src.write_text("\n".join(dev_lines) + "\n", encoding="utf-8")
    for fc, label in ((False, "official_valid"), (True, "official_valid_fc")):
        res = toolsift("check", src, "--mode", "bfcl", "--bfcl-data", shared("bfcl"), *(["--bfcl-fc"] if fc else []))
        assert res.returncode == 1, res.stderr  # some official outputs are invalid
        out = [json.loads(line) for line in res.stdout.splitlines()]
        rows = [json.loads(line) for line in dev_lines]
        assert [o["uid"] for o in out] == [r["uid"] for r in rows]
        assert [o["ok"] for o in out] == [r[label] for r in rows]
        assert all(o["mode"] == "bfcl" and o["fc"] is fc and "bfcl_error_type" in o for o in out)
    assert f"checked {len(dev_lines)} line(s)" in res.stderr


@pytest.mark.parametrize("line, where", [
    ('{"id": "simple_python_1", "calls": [{"math.factorial": {"number": 5}}], "category": "irrelevance"}',
     "line 2: field 'category': unknown BFCL category 'irrelevance'"),
    ('{"id": "simple_python_1", "calls": [{"math.factorial": {"number": 5}}], "language": "rust"}',
     "line 2: field 'language': unknown language 'rust'"),
    ('{"id": "simple_python_99999", "calls": []}', "line 2: field 'id': question id 'simple_python_99999' has no"),
    ('{"id": "simple_python_1", "calls": [{"math.factorial": {"number": 5}}, "f(x)"]}',
     "line 2: field 'calls[1]': a call must be an object"),
    ('{"id": "simple_python_1", "calls": [{"name": "f", "arguments": "{oops"}]}',
     "line 2: field 'calls[0].arguments': not JSON"),
    ('{"id": "simple_python_1"}', "line 2: field 'calls' is missing"),
    ('{"calls": []}', "line 2: field 'id' is missing"),
    ('{"calls": [], "functions": []}', "line 2: field 'ground_truth' is missing"),
    ('{"id": "simple_python_1", "calls": [', "line 2: malformed JSON"),
])
def test_a_bad_line_is_one_line_and_exit_2(tmp_path, line, where):
    good = '{"id": "simple_python_1", "calls": [{"math.factorial": {"number": 5}}]}'
    src = tmp_path / "in.jsonl"
    src.write_text(good + "\n" + line + "\n", encoding="utf-8")
    res = toolsift("check", src, "--mode", "bfcl", "--bfcl-data", shared("bfcl"))
    assert res.returncode == 2
    assert res.stdout == ""  # nothing is printed before every line has been read
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {src}: {where}"), res.stderr
    assert "Traceback" not in res.stderr


def test_audit_bfcl_mode(tmp_path, dev_lines):
    src = tmp_path / "dev.jsonl"
    src.write_text("\n".join(dev_lines) + "\n", encoding="utf-8")
    res = toolsift("audit", src, "--mode", "bfcl", "--bfcl-data", shared("bfcl"), "--json", "--report", tmp_path / "r",
                   "--fail-on", "none")
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    rows = [json.loads(line) for line in dev_lines]
    assert summary["n"] == len(rows)
    assert summary["accuracy"] == pytest.approx(sum(r["official_valid"] for r in rows) / len(rows))
    assert set(summary["by_category"]) == {r["category"] for r in rows}
    assert (tmp_path / "r" / "report.md").read_text(encoding="utf-8").startswith("# Audit: dev.jsonl (bfcl)")
    missing = toolsift("audit", src, "--mode", "strict")
    assert missing.returncode == 2 and "--namespace is required with --mode strict" in missing.stderr
