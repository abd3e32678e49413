"""`toolsift demo` runs the main job end to end on the bundled catalog (what `make demo` shows)."""
from __future__ import annotations

import re

from typer.testing import CliRunner

from router.cli import app


def test_demo_builds_routes_and_checks(tmp_path):
    result = CliRunner().invoke(app, ["demo", "--db", str(tmp_path / "demo.db")], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = result.output
    assert "added 1069" in text  # 94 TorchHub + 80 TF Hub (deduplicated) + 895 Hugging Face records
    assert ": 0 embedded, 1069 from cache" in text  # the shipped vectors: `make demo` embeds nothing
    # every example question gets a ranked table whose first row has a score
    assert text.count("top tools for:") == 3
    assert re.search(r"^ +1\.? +\S+/\S+ +(score )?[01]\.\d{3} ", text, re.M), text
    # the summarization question is answered by a summarization model
    block = text.split("summarizes long English news")[1].split("top tools for")[0]
    assert "summar" in re.search(r"^ +1\.? +(\S+)", block, re.M).group(1)
    # one example output per verdict, each labelled as expected
    for verdict in ("correct", "wrong_api", "hallucinated", "unparsable"):
        assert re.search(rf"^{verdict} +<<<api_call>>>|^{verdict} +I am", text, re.M), verdict
    # it ends with what to try next (issue 40: the demo ended with no next steps)
    tail = text.rsplit("Next", 1)[1]
    assert "toolsift catalog add examples/tools.json" in tail and "toolsift route" in tail
