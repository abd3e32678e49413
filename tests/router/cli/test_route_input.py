"""`toolsift route --queries` with a query that is not valid Unicode (issue #19, item 9):
that line gets an error, every other line its tools; no traceback, exit 0."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from router.index.build import build_index


def test_one_bad_character_does_not_abort_the_run(hub_db, tmp_path):
    build_index(hub_db)  # dense on: the tokenizer is where a lone surrogate used to raise
    queries = tmp_path / "queries.jsonl"
    queries.write_text("\n".join([
        json.dumps({"id": "q1", "query": "detect objects in street photos"}),
        '{"id": "q2\\ud800", "query": "segment brain MRI \\ud800 scans"}',  # valid JSON, not valid Unicode
        json.dumps({"id": "q3", "messages": [{"role": "user", "content": "classify sports videos"}]}),
    ]) + "\n", encoding="utf-8")
    script = Path(sys.executable).parent / "toolsift"
    proc = subprocess.run([str(script), "route", "--queries", str(queries), "--db", str(hub_db), "-k", "2"],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [x["id"] for x in lines] == ["q1", "q2\ud800", "q3"]  # the id round-trips as an escape
    assert len(lines[0]["tools"]) == 2 and len(lines[2]["tools"]) == 2
    assert lines[1]["tools"] == [] and "lone surrogate" in lines[1]["error"]
    assert "\\ud800" in proc.stdout and "error: query q2\\ud800" in proc.stderr
