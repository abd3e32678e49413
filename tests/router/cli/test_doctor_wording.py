"""`toolsift doctor` says what is true (issue 40): no "($TOOLSIFT_CACHE)" when it is not set, no
"built 0.0 h ago", and a stale-index hint that repeats the --db it was given."""
from __future__ import annotations

import json
import os
from pathlib import Path

from tests.support.cli import toolsift

TOOLS = Path(__file__).resolve().parents[3] / "examples" / "tools.json"


def test_doctor_wording(tmp_path):
    db = tmp_path / "c.db"
    env = {k: v for k, v in os.environ.items() if k not in ("TOOLSIFT_CACHE", "TOOLSIFT_ENCODER")}
    cache_env = {"TOOLSIFT_CACHE": str(tmp_path / "cache")}
    assert toolsift("catalog", "add", TOOLS, db=db).returncode == 0
    assert toolsift("index", db=db, env=cache_env).returncode == 0
    other = tmp_path / "more.json"
    tools = json.loads(TOOLS.read_text(encoding="utf-8"))
    other.write_text(json.dumps(tools[:1]), encoding="utf-8")
    assert toolsift("catalog", "add", other, db=db).returncode == 0  # the index is stale now
    import subprocess
    import sys

    script = Path(sys.executable).parent / "toolsift"
    res = subprocess.run([str(script), "doctor", "--db", str(db)], capture_output=True, text=True,
                         env={**env, "TOOLSIFT_FORCE_TERMINAL": "1", "COLUMNS": "200", "HF_HUB_OFFLINE": "1"})
    out = res.stdout
    assert "($TOOLSIFT_CACHE)" not in out and "default; $TOOLSIFT_CACHE moves it" in out, out
    assert "0.0 h ago" not in out and "built just now" in out, out
    assert f"run `toolsift index --db {db}`" in out, out
    set_cache = toolsift("doctor", db=db, terminal=True, env=cache_env)
    assert f"{tmp_path / 'cache'} ($TOOLSIFT_CACHE)" in set_cache.stdout
