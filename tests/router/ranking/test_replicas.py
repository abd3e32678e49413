"""Replicas over one catalog, observed the way a user meets them: `toolsift serve openai --db
postgresql://... --inject-catalog` processes in front of a scripted upstream, and the tools each
one offers in its ``x-toolsift-selected`` header. A `catalog add` / `remove` from another process
reaches the running proxy without a restart; a server that goes away leaves it routing
(``degraded``) and it catches up when the server is back; with SQLite the proxy follows the file."""
from __future__ import annotations

import json
import os
import subprocess

import httpx
import pytest

from tests.conftest import BUNDLED_GORILLA
from tests.support.cli import _SCRIPT, toolsift
from tests.support.postgres import Cluster, binaries_missing, free_port, wait_until
from tests.support.scripted_upstream import ScriptedUpstream, completion

TORCH = BUNDLED_GORILLA / "torchhub_api.jsonl"
QUESTION = "frobnicate the zorblax widgets of my shop"
NEW_TOOL = {"type": "function", "function": {
    "name": "frobnicate_widgets", "description": "Frobnicate the zorblax widgets of a shop.",
    "parameters": {"type": "object", "properties": {"shop": {"type": "string"}}}}}


@pytest.fixture
def upstream():
    with ScriptedUpstream(lambda body: completion("done")) as up:
        yield up


def start_proxy(db: str, upstream: ScriptedUpstream) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOOLSIFT_DB_CONNECT_TIMEOUT": "2"}
    env.pop("TOOLSIFT_DB", None)
    proc = subprocess.Popen([str(_SCRIPT), "serve", "openai", "--db", db, "--inject-catalog", "--port", str(port),
                             "--upstream", upstream.base_url, "-k", "3"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    url = f"http://127.0.0.1:{port}"

    def ready():
        assert proc.poll() is None, proc.stderr.read()
        try:
            return httpx.get(f"{url}/healthz", timeout=5).json()["status"] == "ok"
        except httpx.TransportError:
            return False
    wait_until(ready, 180, 0.2, "the proxy to be ready")
    return proc, url


def offered(url: str) -> list[str]:
    r = httpx.post(f"{url}/v1/chat/completions", timeout=30,
                   json={"model": "m", "messages": [{"role": "user", "content": QUESTION}]})
    assert r.status_code == 200, r.text
    return [t["name"] for t in json.loads(r.headers["x-toolsift-selected"])]


def health(url: str) -> dict:
    return httpx.get(f"{url}/healthz", timeout=5).json()


def add_new_tool(db: str, tmp_path) -> None:
    source = tmp_path / "live.json"
    source.write_text(json.dumps([NEW_TOOL]))
    assert toolsift("catalog", "add", source, "--namespace", "live", db=db).returncode == 0


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    proc.wait(timeout=30)


def test_a_change_reaches_the_running_proxy_and_an_unembedded_record_says_so(pg_url, upstream, tmp_path,
                                                                            own_embedding_cache):
    assert toolsift("catalog", "add", TORCH, db=pg_url).returncode == 0
    indexed = toolsift("index", "--json", db=pg_url)
    assert indexed.returncode == 0, indexed.stderr
    proc, url = start_proxy(pg_url, upstream)
    try:
        assert "frobnicate_widgets" not in offered(url)
        add_new_tool(pg_url, tmp_path)  # another process commits; the proxy is not restarted
        wait_until(lambda: "frobnicate_widgets" in offered(url), 30, 0.1, "the new tool in the proxy's routing")
        sync = health(url)["catalog_sync"]
        assert sync["status"] == "ok" and sync["pending_vectors"] == 1 and sync["passages_embedded"] == 0
        # a fresh route process over the server's catalog says why the new tool has no dense score
        routed = toolsift("route", QUESTION, "--json", "-k", "1", db=pg_url)
        top = json.loads(routed.stdout)["tools"][0]
        assert top["name"] == "frobnicate_widgets" and top["dense_score"] is None and "BM25 only" in top["note"]
        # `toolsift index` embeds just that one passage; the vector then reaches the replica too
        assert json.loads(toolsift("index", "--json", db=pg_url).stdout)["embedded"] == 1
        wait_until(lambda: health(url)["catalog_sync"]["pending_vectors"] == 0, 30, 0.1, "the stored vector")
        assert toolsift("catalog", "remove", "--namespace", "live", db=pg_url).returncode == 0
        wait_until(lambda: "frobnicate_widgets" not in offered(url), 30, 0.1, "the removal in the routing")
        assert health(url)["catalog_sync"]["passages_embedded"] == 0  # the replica never embedded a passage
    finally:
        stop(proc)


@pytest.mark.skipif(binaries_missing() is not None, reason=str(binaries_missing()))
def test_a_lost_server_leaves_the_proxy_routing_degraded_and_it_catches_up(upstream, tmp_path):
    cluster = Cluster()  # its own server: this test stops it
    try:
        db = cluster.create_database()
        assert toolsift("catalog", "add", TORCH, db=db).returncode == 0
        proc, url = start_proxy(db, upstream)
        try:
            before = offered(url)
            cluster.stop()
            wait_until(lambda: health(url)["status"] == "degraded", 30, 0.2, "/healthz to say degraded")
            assert offered(url) == before  # still routing, on the last loaded catalog
            assert "connection" in health(url)["catalog_sync"]["error"] or health(url)["catalog_sync"]["error"]
            cluster.start()
            wait_until(lambda: health(url)["status"] == "ok", 60, 0.2, "/healthz to be ok again")
            add_new_tool(db, tmp_path)
            wait_until(lambda: "frobnicate_widgets" in offered(url), 30, 0.1, "a change after the reconnect")
        finally:
            stop(proc)
    finally:
        cluster.destroy()


def test_a_proxy_over_a_sqlite_file_follows_its_changes(tmp_path, upstream):
    db = str(tmp_path / "catalog.db")
    assert toolsift("catalog", "add", TORCH, db=db).returncode == 0
    proc, url = start_proxy(db, upstream)
    try:
        assert "frobnicate_widgets" not in offered(url)
        add_new_tool(db, tmp_path)
        wait_until(lambda: "frobnicate_widgets" in offered(url), 30, 0.1, "the new tool in the proxy's routing")
        assert health(url)["catalog_sync"]["generation"] == 2
    finally:
        stop(proc)
