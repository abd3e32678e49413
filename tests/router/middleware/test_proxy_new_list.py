"""Issue 42: a request bringing a big tool list the proxy had never seen waited for every tool to be
embedded (10,000 tools: ~59 s) before it got its answer. Now the list is ranked by BM25 at once,
its embeddings are built in the background (once, however many requests bring it), the route
header and the log say so, and a later request is ranked hybrid. The installed
`toolsift serve openai --method hybrid` (no catalog), the scripted upstream, the 1,069 bundled
Gorilla APIs as the list."""
from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from apidb.names import unique_names
from tests.router.middleware.test_proxy_hardening import free_port, start_cli, wait_health
from tests.support.scripted_upstream import ScriptedUpstream, call_first_tool

HYBRID_DEADLINE = 600.0  # seconds for the 1,069 embeddings on a busy shared machine


def _body(tools: list[dict], text: str) -> dict:
    return {"model": "m", "messages": [{"role": "user", "content": text}], "tools": tools}


@pytest.mark.slow
def test_a_big_new_list_is_answered_by_bm25_then_ranked_hybrid_once_embedded(gorilla_records):
    tools = [r.to_openai_tool(name=n) for r, n in zip(gorilla_records, unique_names(gorilla_records))]
    assert len(tools) > 1000
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with ScriptedUpstream(call_first_tool, repeat_last=True) as up:
        proc = start_cli("--upstream", up.url, "--port", str(port), "--method", "hybrid", "-k", "5")
        try:
            wait_health(url, proc, deadline=300)
            first: list[httpx.Response] = []

            def ask() -> None:  # two clients bring the same new list at once
                first.append(httpx.post(f"{url}/v1/chat/completions", timeout=300,
                                        json=_body(tools, "classify bird species in my garden photos")))

            clients = [threading.Thread(target=ask) for _ in range(2)]
            for c in clients:
                c.start()
            for c in clients:
                c.join()
            assert [r.status_code for r in first] == [200, 200]
            for r in first:  # answered before the embeddings were done, and saying so
                assert "dense=building" in r.headers["x-toolsift-route"], r.headers["x-toolsift-route"]
                assert len(json.loads(r.headers["x-toolsift-selected"])) == 5
            routes, end = [], time.monotonic() + HYBRID_DEADLINE
            while time.monotonic() < end:
                r = httpx.post(f"{url}/v1/chat/completions", timeout=300,
                               json=_body(tools, "translate a sentence from English to French"))
                assert r.status_code == 200
                routes.append(r.headers["x-toolsift-route"])
                if "dense=" not in routes[-1]:
                    break
                time.sleep(0.5)
            assert "dense=" not in routes[-1], f"still not hybrid after {HYBRID_DEADLINE:.0f} s: {routes[-1]}"
            assert routes[-1].startswith("routed; in=1069; out=5")
            caches = httpx.get(f"{url}/metrics?format=json", timeout=30).json()["caches"]
        finally:
            proc.terminate()
            _, err = proc.communicate(timeout=60)
    # every tool embedded once: one build for the two concurrent first requests and the ones after
    assert caches["vectors"]["misses"] == len(tools) and caches["vectors"]["hits"] == 0, caches
    assert caches["embedding"]["pending"] == 0
    lines = [json.loads(x) for x in err.splitlines() if x.startswith("{")]
    routed = [x for x in lines if x.get("path") == "/v1/chat/completions"]
    assert [x.get("dense") for x in routed[:2]] == ["building", "building"]
    assert "dense" not in routed[-1]
    assert "hybrid ranking from now on" in err


def test_background_embedding_is_bounded_and_builds_each_list_once():
    """At most two lists wait for (or are in) the embedding thread; a third is refused (its requests
    say dense=waiting) until a place frees; a list already queued is not queued twice; a failing job
    frees its place; the thread is a daemon, so a stopping process never waits for it."""
    from router.middleware.list_routers import BackgroundEmbedding

    bg = BackgroundEmbedding(max_pending=2)
    gate, ran = threading.Event(), []

    def job(name: str, fail: bool = False):
        def run(progress) -> None:
            gate.wait(30)
            progress(10)
            ran.append(name)
            if fail:
                raise RuntimeError("encoder gone")
        return run

    assert bg.submit("a", job("a")) and bg.submit("b", job("b", fail=True))
    assert bg.submit("a", job("a-again"))  # already queued: accepted, not queued twice
    assert not bg.submit("c", job("c"))    # full
    assert bg.building("a") and bg.building("b") and not bg.building("c")
    assert bg._worker is not None and bg._worker.daemon
    gate.set()
    end = time.monotonic() + 30
    while bg.stats()["pending"] and time.monotonic() < end:
        time.sleep(0.01)
    assert ran == ["a", "b"] and bg.stats() == {"pending": 0, "done": 1, "failed": 1, "refused": 1}
    assert bg.submit("c", job("c"))        # a place is free again
    end = time.monotonic() + 30
    while bg.building("c") and time.monotonic() < end:
        time.sleep(0.01)
    assert ran == ["a", "b", "c"]


def test_a_big_list_waiting_for_the_embedding_thread_is_not_warm(gorilla_records):
    """`RequestRouter.warm` decides whether the proxy routes a request on its event loop. A big list
    whose BM25 router is cached but whose embedding is not running (the queue was full: dense=waiting)
    will queue it, or build it inline, on its next request: a worker thread's job, so not warm."""
    from router.middleware.request import RequestRouter
    from router.middleware.request_body import read_request

    tools = [r.to_openai_tool(name=n) for r, n in zip(gorilla_records, unique_names(gorilla_records))][:40]
    rr = RequestRouter(None, k=3, method="hybrid", embed_inline=10)
    rr.lists.background.max_pending = 0  # every list is refused: nothing is embedded in this test
    raw = json.dumps(_body(tools, "classify bird species in my garden photos")).encode()
    routed = rr.route(read_request(raw))
    assert routed.extra.get("dense") == "waiting" and routed.tools_out == 3
    assert not rr.warm(read_request(raw))
