"""Issue 42: no password ever appears in any output, for every URL form libpq accepts.

A session of the installed `toolsift` against a real (throwaway) PostgreSQL cluster, its URL
carrying a password in the user-info, as ``?password=``, percent-encoded, and with several
hosts: every command's stdout and stderr, the proxy's /healthz and its log are grepped for the
password. (The cluster trusts local connections, so the password is accepted and unused.)
And malformed URLs (--db, --upstream): one line naming the problem, exit 2, never a traceback.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import BUNDLED_GORILLA
from tests.router.middleware.test_proxy_hardening import free_port, wait_health
from tests.support.cli import toolsift

SECRET = "s3cr3t-PASS-w0rd"
_SCRIPT = Path(sys.executable).parent / "toolsift"


def forms(url: str) -> dict[str, str]:
    """The database of ``url`` (postgresql://user@host:port/db) with the password in each form."""
    scheme, rest = url.split("://", 1)
    user, where = rest.split("@", 1)
    host, db = where.split("/", 1)
    return {"userinfo": f"{scheme}://{user}:{SECRET}@{where}",
            "query": f"postgres://{user}@{where}?password={SECRET}&sslmode=disable",
            "percent": f"{scheme}://{user}:{SECRET.replace('-', '%2D')}@{where}",
            "hosts": f"{scheme}://{user}:{SECRET}@{host},{host}/{db}",
            "keyword_in_query": f"{scheme}:///{db}?host=127.0.0.1&port={host.split(':')[1]}&user={user}"
                                f"&password={SECRET}"}


def assert_clean(text: str, what: str) -> None:
    assert SECRET not in text and SECRET.replace("-", "%2D") not in text, f"{what} shows the password:\n{text}"


def test_no_output_of_a_session_shows_the_password(pg_url, tmp_path):
    urls = forms(pg_url)
    add = toolsift("catalog", "add", BUNDLED_GORILLA / "torchhub_api.jsonl", "--db", urls["userinfo"])
    assert add.returncode == 0, add.stderr
    assert_clean(add.stdout + add.stderr, "catalog add")
    bad_queries = tmp_path / "q.jsonl"
    bad_queries.write_text('{"id": "q1", "query": "detect objects", "relevant": ["no/such-tool"]}\n')
    for form, url in urls.items():
        runs = {
            "catalog stats": toolsift("catalog", "stats", "--db", url, "--json"),
            "catalog list": toolsift("catalog", "list", "--db", url, "--json"),
            "route": toolsift("route", "detect objects in an image", "--db", url, "--method", "bm25", "--json"),
            "doctor": toolsift("doctor", "--db", url, "--json"),
            "doctor terminal": toolsift("doctor", "--db", url, terminal=True),
            "tune": toolsift("tune", "--db", url, "--queries", bad_queries, "--out", tmp_path / f"tuned-{form}"),
            "bench retrieval": toolsift("bench", "retrieval", "--db", url, "--queries", bad_queries),
        }
        for name, r in runs.items():
            assert_clean(r.stdout + r.stderr, f"{name} ({form})")
            assert "Traceback" not in r.stderr, f"{name} ({form}): {r.stderr}"
        stats = json.loads(runs["catalog stats"].stdout)
        assert stats["records"] == 94 and ("***@" in json.dumps(stats) or "password=***" in json.dumps(stats))
        # the URL is a catalog, not a file path: the error is about the queries' labels
        for name in ("tune", "bench retrieval"):
            assert runs[name].returncode == 2 and "no such catalog" not in runs[name].stderr, runs[name].stderr
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("TOOLSIFT_DB", None)
    proc = subprocess.Popen([str(_SCRIPT), "serve", "openai", "--upstream", f"http://u:{SECRET}@127.0.0.1:9/v1",
                             "--db", urls["query"], "--method", "bm25", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        wait_health(f"http://127.0.0.1:{port}", proc)
        health = httpx.get(f"http://127.0.0.1:{port}/healthz").text
        r = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json={"model": "m", "messages": [
            {"role": "user", "content": "hi"}]}, timeout=30)
        assert r.status_code == 502
        assert_clean(health + r.text, "the proxy's answers")
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    assert_clean(out + err, "the proxy's log")


@pytest.mark.parametrize("url, problem", [
    (f"postgresql://u:{SECRET}@127.0.0.1:abc/db", "port 'abc' is not a number"),
    (f"postgresql://u:{SECRET}@127.0.0.1:99999/db", "port '99999' is not a number"),
    (f"postgresql://u:{SECRET}@[::1/db", "closing ']'"),
    (f"postgres://u:{SECRET}@[::1]:x/db", "port 'x'"),
])
def test_a_malformed_db_url_is_one_line_without_the_password(url, problem):
    for command in (["catalog", "stats"], ["route", "hello"], ["doctor"]):
        r = toolsift(*command, "--db", url)
        assert "Traceback" not in r.stderr and r.returncode in (1, 2), (command, r.stderr)
        assert_clean(r.stdout + r.stderr, " ".join(command))
        assert problem in r.stdout + r.stderr
    assert len(toolsift("catalog", "stats", "--db", url).stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("url", ["http://[::1/v1", f"http://u:{SECRET}@h:99999/v1", "http://h:port/v1"])
def test_a_malformed_upstream_url_is_one_line_without_the_password(url):
    for command in ("openai", "anthropic"):
        r = toolsift("serve", command, "--upstream", url, "--port", str(free_port()))
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and "--upstream" in r.stderr
        assert_clean(r.stderr, "serve")
