"""Issue 42: a $TOOLSIFT_CACHE that cannot be created (under a file, under /proc) is one line naming
the folder, exit 2, where a command needs the cache; `toolsift route` was a NotADirectoryError
traceback. Since the default encoder ships ready to run (issue 39), a route on an indexed catalog
does not need the cache at all and answers."""
from __future__ import annotations

import json
import uuid

from tests.conftest import BUNDLED_GORILLA
from tests.support.cli import toolsift


def test_an_uncreatable_cache_folder_is_one_line(tmp_path):
    db = tmp_path / "catalog.db"
    assert toolsift("catalog", "add", BUNDLED_GORILLA / "torchhub_api.jsonl", db=db).returncode == 0
    assert toolsift("index", db=db).returncode == 0  # the shipped vectors: nothing to encode
    tools = tmp_path / "tools.json"  # a tool no cache holds: it must be embedded, and its vector cached
    tools.write_text(json.dumps([{"type": "function", "function": {
        "name": "file_expense_report", "description": f"File an expense report (run {uuid.uuid4().hex}).",
        "parameters": {"type": "object", "properties": {"amount": {"type": "number"}}}}}]))
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    for n, cache in enumerate((blocker / "cache", "/proc/toolsift-cache")):
        env = {"TOOLSIFT_CACHE": str(cache)}
        own = tmp_path / f"own{n}.db"
        routed = toolsift("route", "detect objects in an image", "--method", "hybrid", db=db, env=env)
        assert routed.returncode == 0 and "Traceback" not in routed.stderr, routed.stderr[-1500:]
        r = toolsift("catalog", "add", tools, "--namespace", "expenses", db=own, env=env)
        assert "Traceback" not in r.stderr, r.stderr[-1500:]
        if r.returncode == 0:  # adding did not embed: indexing does, and needs the cache
            r = toolsift("index", db=own, env=env)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-1500:]
        errors = [line for line in r.stderr.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1 and str(cache) in errors[0] and "TOOLSIFT_CACHE" in errors[0], r.stderr
