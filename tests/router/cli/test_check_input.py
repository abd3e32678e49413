"""`toolsift check`: the user's input mistakes are one error line and exit 2, never an `error`
verdict per line and exit 1 (which means "the model made bad calls") — issue 40."""
from __future__ import annotations

import json

from tests.support.cli import toolsift

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
GOOD = {"id": "a", "calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}], "functions": TOOLS}
BAD_MODEL = {"id": "b", "calls": [{"name": "weather", "arguments": {"city": "Oslo"}}], "functions": TOOLS}


def _one_error_line(res, *parts: str) -> None:
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    assert res.stdout == "" and "Traceback" not in res.stderr
    for part in parts:
        assert part in lines[0], lines[0]


def test_a_pretty_printed_json_file_is_one_error_naming_what_it_is(tmp_path):
    src = tmp_path / "calls.json"
    src.write_text(json.dumps([GOOD, BAD_MODEL], indent=2), encoding="utf-8")
    res = toolsift("check", src, db=tmp_path / "none.db")
    _one_error_line(res, str(src), "line 1", "JSON Lines", "one JSON document")


def test_a_mistyped_key_is_one_error_with_a_suggestion(tmp_path):
    src = tmp_path / "calls.jsonl"
    wrong = {"id": "c", "call": GOOD["calls"], "functions": TOOLS}
    src.write_text("\n".join(json.dumps(x) for x in (GOOD, wrong)) + "\n", encoding="utf-8")
    res = toolsift("check", src, db=tmp_path / "none.db")
    _one_error_line(res, f"{src}: line 2", "'call'", "did you mean 'calls'?")


def test_a_line_that_is_not_an_object_is_one_error(tmp_path):
    src = tmp_path / "calls.jsonl"
    src.write_text(json.dumps(GOOD) + "\n[1, 2]\n", encoding="utf-8")
    _one_error_line(toolsift("check", src), f"{src}: line 2", "expected an object")


def test_no_catalog_is_one_error_not_one_per_line(tmp_path):
    src = tmp_path / "calls.jsonl"
    bare = [{"id": i, "calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]} for i in range(5)]
    src.write_text("\n".join(json.dumps(x) for x in bare) + "\n", encoding="utf-8")
    _one_error_line(toolsift("check", src, db=tmp_path / "missing.db"), "missing.db", "no catalog")


def test_bad_model_calls_still_exit_1_with_their_verdicts(tmp_path):
    src = tmp_path / "calls.jsonl"
    src.write_text("\n".join(json.dumps(x) for x in (GOOD, BAD_MODEL)) + "\n", encoding="utf-8")
    res = toolsift("check", src, db=tmp_path / "unused.db")  # every line brings its functions
    assert res.returncode == 1, res.stderr
    assert [json.loads(x)["verdict"] for x in res.stdout.splitlines()] == ["valid", "hallucinated_tool"]


def test_an_empty_catalog_warns(tmp_path):
    from apidb import Catalog

    db = tmp_path / "empty.db"
    with Catalog(db) as cat:
        cat.sync([])
    src = tmp_path / "calls.jsonl"
    src.write_text(json.dumps({"id": 1, "calls": GOOD["calls"]}) + "\n", encoding="utf-8")
    res = toolsift("check", src, db=db)
    assert "holds no tools" in res.stderr and "catalog add" in res.stderr, res.stderr


def test_a_postgresql_server_that_does_not_answer_is_one_error_not_one_wait_per_line(tmp_path):
    """A socket that listens but never speaks: each connect waits the whole connect timeout.
    Ten lines must cost one wait and end as one error line (exit 2), not ten `error` verdicts."""
    import socket
    import time

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    try:
        url = f"postgresql://u:s3cret@127.0.0.1:{silent.getsockname()[1]}/tools"
        src = tmp_path / "calls.jsonl"
        bare = [{"id": i, "calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]} for i in range(10)]
        src.write_text("\n".join(json.dumps(x) for x in bare) + "\n", encoding="utf-8")
        t0 = time.monotonic()
        res = toolsift("check", src, "--db", url, env={"TOOLSIFT_DB_CONNECT_TIMEOUT": "1"})
        elapsed = time.monotonic() - t0
    finally:
        silent.close()
    _one_error_line(res, "cannot connect to the PostgreSQL server", f"127.0.0.1:{url.split(':')[3]}")
    assert "s3cret" not in res.stderr
    assert elapsed < 8, f"{elapsed:.1f} s: the connect was retried per line"
