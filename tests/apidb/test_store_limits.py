"""Issue 42: the same key limits in SQLite and PostgreSQL. A tool name of a few KB was accepted
by SQLite and refused by PostgreSQL's btree with "lost the connection to the PostgreSQL server"
(the connection was fine). Now both stores refuse it before writing, with one line naming the
file, the record and the field, and the catalog is unchanged; a name at the limit is stored by both."""
from __future__ import annotations

import json

import pytest

MAX_ID_BYTES = 1024  # the documented limit (apidb.limits.MAX_ID_BYTES, docs)
from tests.support.cli import toolsift


def tools_file(path, name: str):
    path.write_text(json.dumps([{"type": "function", "function": {"name": name, "description": "d",
                                                                    "parameters": {"type": "object"}}}]))
    return path


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_an_over_long_name_is_refused_alike_by_both_stores(store, tmp_path, request):
    db = str(tmp_path / "c.db") if store == "sqlite" else request.getfixturevalue("pg_url")
    ok = tools_file(tmp_path / "ok.json", "get_weather")
    assert toolsift("catalog", "add", ok, "--db", db).returncode == 0
    for name, extra, field in (("x" * 3000, [], "id"), ("get_time", ["--namespace", "n" * 300], "namespace")):
        bad = tools_file(tmp_path / "bad.json", name)
        r = toolsift("catalog", "add", bad, "--db", db, *extra)
        assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
        assert str(bad) in r.stderr and f"field {field!r}" in r.stderr and "lost the connection" not in r.stderr
    stats = json.loads(toolsift("catalog", "stats", "--db", db, "--json").stdout)
    assert stats["records"] == 1  # unchanged
    edge = "y" * (MAX_ID_BYTES - len("edge/"))
    r = toolsift("catalog", "add", tools_file(tmp_path / "edge.json", edge), "--db", db, "--namespace", "edge")
    assert r.returncode == 0, r.stderr
    assert json.loads(toolsift("catalog", "stats", "--db", db, "--json").stdout)["records"] == 2
