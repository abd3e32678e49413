"""Tenants over a live catalog (issue 17): a `toolsift serve openai --tenants` process over a SQLite
catalog that another process changes. A namespace a tenant may see but that did not exist when the
proxy started is offered to that tenant once `catalog add` commits it, and never to another tenant."""
from __future__ import annotations

import json
import os
import subprocess

import httpx
import pytest

from router.tenancy.tenants import hash_key
from tests.router.ranking.test_replicas import NEW_TOOL, QUESTION, TORCH, add_new_tool, stop
from tests.support.cli import _SCRIPT, toolsift
from tests.support.postgres import free_port, wait_until
from tests.support.scripted_upstream import ScriptedUpstream, completion

SHOP_KEY, VISION_KEY = "tsk_shop-team-key-0123456789", "tsk_vision-team-key-0123456789"
NEW_NAME = NEW_TOOL["function"]["name"]


@pytest.fixture
def upstream():
    with ScriptedUpstream(lambda body: completion("done")) as up:
        yield up


def offered(url: str, key: str) -> list[str]:
    r = httpx.post(f"{url}/v1/chat/completions", timeout=30, headers={"x-toolsift-key": key},
                   json={"model": "m", "messages": [{"role": "user", "content": QUESTION}]})
    assert r.status_code == 200, r.text
    return [t["name"] for t in json.loads(r.headers["x-toolsift-selected"])]


def test_a_namespace_added_while_serving_reaches_only_its_tenant(tmp_path, upstream):
    db = str(tmp_path / "catalog.db")
    assert toolsift("catalog", "add", TORCH, db=db).returncode == 0
    tenants = tmp_path / "tenants.toml"
    tenants.write_text(f'[tenants.shop]\nkey_sha256 = "{hash_key(SHOP_KEY)}"\nnamespaces = ["live"]\n\n'
                       f'[tenants.vision]\nkey_sha256 = "{hash_key(VISION_KEY)}"\nnamespaces = ["torchhub"]\n',
                       encoding="utf-8")
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("TOOLSIFT_DB", None)
    proc = subprocess.Popen([str(_SCRIPT), "serve", "openai", "--db", db, "--inject-catalog", "--port", str(port),
                             "--upstream", upstream.base_url, "-k", "3", "--tenants", str(tenants)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    url = f"http://127.0.0.1:{port}"

    def ready():
        assert proc.poll() is None, proc.stderr.read()
        try:
            return httpx.get(f"{url}/healthz", timeout=5).json()["status"] == "ok"
        except httpx.TransportError:
            return False
    wait_until(ready, 180, 0.2, "the proxy to be ready")
    try:
        assert offered(url, SHOP_KEY) == []  # its namespace is not in the catalog yet
        vision_before = offered(url, VISION_KEY)
        assert vision_before and NEW_NAME not in vision_before
        add_new_tool(db, tmp_path)  # namespace "live"
        wait_until(lambda: offered(url, SHOP_KEY) == [NEW_NAME], 30, 0.1, "the new namespace in the shop's routing")
        assert NEW_NAME not in offered(url, VISION_KEY)
    finally:
        stop(proc)


def test_tenants_check_reads_a_postgresql_catalog(pg_url, tmp_path):
    assert toolsift("catalog", "add", TORCH, db=pg_url).returncode == 0
    tenants = tmp_path / "tenants.toml"
    tenants.write_text(f'[tenants.vision]\nkey_sha256 = "{hash_key(VISION_KEY)}"\nnamespaces = ["torchhub", "nope"]\n',
                       encoding="utf-8")
    out = toolsift("tenants", "check", tenants, "--json", db=pg_url)
    assert out.returncode == 0, out.stderr
    [row] = json.loads(out.stdout)["tenants"]
    assert row["tools"] == 94 and row["not_in_catalog"] == ["nope"], row
