"""The usage log (router.training.usage_log): its lines, rotation, concurrent writers, the reader's errors, and
`toolsift tune --from-log` / `toolsift route` as a user runs them."""
from __future__ import annotations

import json
import multiprocessing
import threading

import pytest

from router.errors import RouterError
from router.training.usage_log import UsageLog, examples, read_events
from tests.support.cli import toolsift


def _write(path, n: int, content: bool = True, **kw) -> UsageLog:
    log = UsageLog(path, content=content, **kw)
    for i in range(n):
        log.record(source="proxy", query=f"weather in city {i} please", offered=["get_weather", "get_time"],
                   called="get_weather", verdict="valid", record_id=None, route="routed")
    return log


def _many(path: str, start: int) -> None:
    log = UsageLog(path, content=True, max_bytes=4096, keep=50)
    for i in range(start, start + 100):
        log.record(source="proxy", query=f"q{i} " + "x" * 50, offered=["a"], called="a", verdict="valid")


def test_lines_hold_no_contents_unless_allowed_and_no_credentials(tmp_path):
    plain = _write(tmp_path / "plain.jsonl", 1, content=False)
    row = json.loads(plain.path.read_text())
    assert "query" not in row and len(row["query_hmac"]) == 64 and row["v"] == 2 and "query_sha256" not in row
    log = UsageLog(tmp_path / "full.jsonl", content=True)
    log.record(source="proxy", query="use key sk-abcdefghijklmnopqrstu and Bearer abc.def-ghi123 or token: hunter2",
               offered=["x"], called="x", verdict="valid")
    text = log.path.read_text()
    assert "sk-abc" not in text and "abc.def" not in text and "hunter2" not in text and text.count("[redacted]") == 3


def test_rotation_keeps_the_files_bounded(tmp_path):
    log = _write(tmp_path / "u.jsonl", 200, max_bytes=4096, keep=2)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["u.jsonl", "u.jsonl.1", "u.jsonl.2"]
    assert all(p.stat().st_size <= 4096 for p in tmp_path.iterdir())
    assert read_events(log.path)[-1]["query"] == "weather in city 199 please"


def test_concurrent_threads_and_processes_never_interleave_lines(tmp_path):
    path = str(tmp_path / "c.jsonl")
    threads = [threading.Thread(target=_many, args=(path, i * 100)) for i in range(3)]
    procs = [multiprocessing.get_context("spawn").Process(target=_many, args=(path, 1000 + i * 100)) for i in range(2)]
    for w in threads + procs:
        w.start()
    for w in threads + procs:
        w.join()
    seen = [e["query"].split()[0] for p in tmp_path.iterdir() for e in read_events(p)]
    assert sorted(seen) == sorted(f"q{i}" for i in [*range(300), *range(1000, 1200)])


@pytest.mark.parametrize("line, message", [
    ("not json", "line 2: not JSON"),
    ('{"v": 3, "called": "a", "query_hmac": "h"}', "line 2: field 'v'"),
    ('{"v": 2, "called": "a", "query_sha256": "h"}', "line 2: field 'query_hmac'"),
    ('{"v": 1, "called": "", "query_sha256": "h"}', "line 2: field 'called'"),
    ('{"v": 1, "called": "a", "query_sha256": "h", "id": 3}', "line 2: field 'id'"),
])
def test_a_malformed_line_is_an_error_naming_file_line_and_field(tmp_path, line, message):
    log = _write(tmp_path / "u.jsonl", 1)
    log.path.write_text(log.path.read_text() + line + "\n")
    with pytest.raises(RouterError, match=message):
        read_events(log.path)


def test_examples_resolve_names_against_the_catalog(tmp_path, gorilla_records):
    rec = gorilla_records[0]
    log = UsageLog(tmp_path / "u.jsonl", content=True)
    log.record(source="proxy", query="a question", offered=[rec.openai_name()], called=rec.openai_name(), verdict="valid")
    log.record(source="proxy", query="another", offered=["nope"], called="no_such_tool", verdict="valid")
    plain = _write(tmp_path / "plain.jsonl", 2, content=False)
    found = examples([log.path, plain.path], gorilla_records)
    assert [(t, r) for _, t, r in found.queries] == [("a question", {rec.id})]
    assert (found.lines, found.no_text, found.unknown) == (4, 2, 1)


def test_tune_from_a_log_without_contents_says_why_it_cannot(tmp_path, gorilla_db):
    log = _write(tmp_path / "plain.jsonl", 3, content=False)
    r = toolsift("tune", "--from-log", log.path, "--out", tmp_path / "model", db=gorilla_db)
    assert r.returncode == 2 and "nothing to train on" in r.stderr and "without query text" in r.stderr
    r = toolsift("tune", "--out", tmp_path / "model", db=gorilla_db)
    assert r.returncode == 2 and "--queries FILE or --from-log LOG" in r.stderr


def test_route_json_says_abstain_adaptive_k_and_parts(gorilla_db):
    r = toolsift("route", "classify sports activities in videos. Also translate english to french", "--json",
                 "--method", "bm25", db=gorilla_db)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["parts"] == 2 and out["adaptive_k"] == len(out["tools"]) <= 10 and out["abstain"] is None
    fixed = json.loads(toolsift("route", "translate english to french", "-k", "3", "--json", "--method", "bm25",
                                db=gorilla_db).stdout)
    assert len(fixed["tools"]) == 3 and fixed["adaptive_k"] is None
    # a period after a title ends no part: still two parts, not "... filmed by Dr." and "Smith in the park."
    titled = json.loads(toolsift("route", "classify sports activities in videos filmed by Dr. Smith in the park. "
                                 "Also translate english to french", "--json", "--method", "bm25",
                                 db=gorilla_db).stdout)
    assert titled["parts"] == 2
