"""Issue 42: what the usage log may tell, through the real proxy process with --usage-log.

- No plain hash of the user's text: a short message was recovered by hashing candidates. The
  line carries a keyed hash (a key each proxy process makes and never writes).
- The hash is of the scrubbed query: two messages that differ only in a redacted secret hash alike,
  so the hash cannot confirm a guess of the secret.
- A hostile tool list (names of hundreds of KB) cannot make the log's lines, or the proxy's own
  log, grow by those bytes.
"""
from __future__ import annotations

import hashlib
import json

from tests.router.middleware.test_proxy_abstain_usage import _ask, _serve
from tests.support.cli import stop
from tests.support.scripted_upstream import ScriptedUpstream, call_first_tool

SHORT = "weather in Paris?"


def tools(*names: str) -> list[dict]:
    return [{"type": "function", "function": {"name": n, "description": f"tool {i}: weather forecast",
                                              "parameters": {"type": "object", "properties": {}}}}
            for i, n in enumerate(names)]


def test_the_usage_log_holds_no_plain_hash_and_hashes_after_scrubbing(tmp_path):
    few = tools("get_weather", "get_time")
    lines = []
    with ScriptedUpstream(call_first_tool, repeat_last=True) as up:
        for run in range(2):
            log = tmp_path / f"usage{run}.jsonl"
            proc, url = _serve(up.base_url, "--method", "bm25", "--usage-log", str(log), "--usage-log-content")
            try:
                _ask(url, SHORT, few)
                _ask(url, "weather in Paris? api_key=AAAAAAAAAAAAAAAA1", few)
                _ask(url, "weather in Paris? api_key=BBBBBBBBBBBBBBBB2", few)
            finally:
                stop(proc)
            lines.append([json.loads(x) for x in log.read_text().splitlines()])
    first, second = lines
    assert len(first) == 3 and all("query_sha256" not in x for x in first)
    text = first[0]["query"]
    for candidate in (SHORT, text):  # a dictionary attack on the hash finds nothing
        assert hashlib.sha256(candidate.encode()).hexdigest() not in json.dumps(first)
    # the two secrets were scrubbed before hashing: the same hash, and neither secret in the file
    assert first[1]["query_hmac"] == first[2]["query_hmac"] and first[0]["query_hmac"] != first[1]["query_hmac"]
    assert "AAAAAAAA" not in json.dumps(first) and "BBBBBBBB" not in json.dumps(first)
    # keyed per process: the same message in another process hashes differently
    assert first[0]["query_hmac"] != second[0]["query_hmac"] and first[0]["query"] == second[0]["query"]


def test_hostile_tool_names_do_not_grow_the_logs(tmp_path):
    huge = "w" * 300_000
    log = tmp_path / "usage.jsonl"
    with ScriptedUpstream(call_first_tool, repeat_last=True) as up:
        proc, url = _serve(up.base_url, "--method", "bm25", "--usage-log", str(log))
        try:
            r = _ask(url, SHORT, tools("get_weather", huge, "get_time"))  # the model calls the first tool
            assert r.http_response.status_code == 200
            r = _ask(url, SHORT, tools(huge, "get_weather"))  # a call of the huge name: not logged
            assert r.http_response.status_code == 200
        finally:
            err = stop(proc)
    lines = log.read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["offered"] == ["get_weather", "get_time"]
    assert log.stat().st_size < 2_000
    assert len(err) < 20_000  # the proxy's own request log does not repeat the names either
