"""`router.training.tune` and `toolsift tune`: a real fine-tune of the bundled MiniLM on real APIBench
TorchHub questions (a few steps on 2 CPUs), the saved folder used as the router's model,
cache invalidation when the folder is written again, and one-line errors on bad input."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from router.errors import RouterError
from tests.conftest import ROOT, shared


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """TorchHub's 94 APIs, 96 of its published training questions, a model tuned on them."""
    shared("gorilla", "apibench", "torchhub_train.json")
    from benchmarks.data.datasets import apibench_training, load_dataset
    from router.training.tune import TuneConfig, tune

    ds = load_dataset("apibench_torchhub")
    train = apibench_training("torchhub")[::8][:96]  # spread over the hub's APIs
    examples = [(q.text, next(iter(q.relevant))) for q in train]
    out = tmp_path_factory.mktemp("tune") / "model"
    # from the untuned MiniLM: the shipped general encoder trained on these questions already
    report = tune(ds.records, examples, out, base_model="all-MiniLM-L6-v2", config=TuneConfig(epochs=3, learning_rate=1e-4))
    return ds, train, out, report


def _dense_recall(records, queries, model) -> float:
    from router import Router

    r = Router(records, model=model)
    return float(np.mean([any(s.record.id in q.relevant for s in r.select(q.text, k=5, method="dense"))
                          for q in queries]))


def test_tuned_model_learns_its_questions_and_routes(hub):
    ds, train, out, report = hub
    assert report.examples == 96 and report.epochs == 3 and report.steps >= 9
    saved = json.loads((out / "toolsift-tune.json").read_text())
    assert saved["base_model"] == "all-MiniLM-L6-v2" and saved["config"]["learning_rate"] == 1e-4
    before = _dense_recall(ds.records, train, "all-MiniLM-L6-v2")
    after = _dense_recall(ds.records, train, str(out))
    assert after >= before + 0.1, (before, after)


def test_base_model_is_untouched_by_training(hub):
    from router.encoders.dense import load_model, model_identity

    _, _, out, _ = hub
    base = load_model("all-MiniLM-L6-v2").encode(["classify bird photos"], normalize_embeddings=True)
    tuned = load_model(str(out)).encode(["classify bird photos"], normalize_embeddings=True)
    fresh = _fresh_base().encode(["classify bird photos"], normalize_embeddings=True)
    assert np.allclose(base, fresh, atol=1e-5) and not np.allclose(base, tuned, atol=1e-3)
    assert model_identity(str(out)).startswith(str(out.resolve()) + "@")


def _fresh_base():
    from router.encoders.dense import fresh_model

    return fresh_model("all-MiniLM-L6-v2")


def test_writing_the_folder_again_invalidates_index_and_cache(hub, tmp_path, own_embedding_cache):
    from apidb import Catalog
    from router.encoders.dense import model_identity
    from router.index.build import build_index, load_index

    ds, _, out, _ = hub
    db = tmp_path / "hub.db"
    with Catalog(db) as cat:
        cat.sync(ds.records)
    first = build_index(db, model=str(out))
    assert first.embedded == 94
    assert build_index(db, model=str(out)).up_to_date
    old = model_identity(str(out))
    weights = out / "model.safetensors"
    st = weights.stat()
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # as a new `tune` run would
    assert model_identity(str(out)) != old
    loaded = load_index(db, model=str(out))
    assert loaded.dense is None and any("changed since the index was built" in w for w in loaded.warnings)
    again = build_index(db, model=str(out))
    assert not again.up_to_date and again.embedded == 94  # no vector of the old weights reused


def test_fusion_weights_recorded_in_the_folder_are_the_routers_default(hub):
    from router.encoders.dense import model_identity
    from router import Router, RouterConfig
    from router.ranking.config import tuned_weights
    from router.training.tune import record_weights

    ds, _, out, _ = hub
    identity = model_identity(str(out))
    record_weights(out, (0.2, 0.8), {0.6: 0.5, 0.8: 0.6}, 10)
    assert tuned_weights(str(out)) == (0.2, 0.8)
    assert model_identity(str(out)) == identity  # the weights are not the model's: no re-embedding
    assert Router(ds.records, model=str(out)).config.weights == (0.2, 0.8)
    assert Router(ds.records, model=str(out)).config.depth == 100  # the depth its weights were fitted at
    assert Router(ds.records, model=str(out), config=RouterConfig()).config.weights == (0.4, 0.6)
    assert Router(ds.records).config.weights == (0.4, 0.6)


@pytest.mark.parametrize("examples, needle", [
    ([("find a model", "torchhub/nope"), ("x", "torchhub/nope")], "example 1 names tool 'torchhub/nope'"),
    ([("  ", None)], "example 1 has an empty query"),
    ([("classify images", None)], "needs at least 2 labelled examples"),
    ([("classify images", None), ("classify photos", None)], "all examples name the same tool"),
])
def test_bad_examples_are_one_line_errors(hub, tmp_path, examples, needle):
    from router.training.tune import tune

    ds = hub[0]
    examples = [(q, rid or ds.records[0].id) for q, rid in examples]
    with pytest.raises(RouterError, match="^tune: ") as exc:
        tune(ds.records, examples, tmp_path / "m")
    assert needle in str(exc.value) and not (tmp_path / "m").exists()


def test_refuses_to_replace_a_folder_it_did_not_write(hub, tmp_path):
    from router.training.tune import tune

    ds = hub[0]
    (tmp_path / "keep.txt").write_text("mine")
    pairs = [("classify images", ds.records[0].id), ("detect objects", ds.records[1].id)]
    with pytest.raises(RouterError, match="not a folder written by `toolsift tune`"):
        tune(ds.records, pairs, tmp_path)
    assert (tmp_path / "keep.txt").read_text() == "mine"


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "router.cli", *args], capture_output=True, text=True,
                          env=env, timeout=600, cwd=ROOT)


def test_cli_tunes_with_a_holdout_and_reports_json(hub, tmp_path):
    from apidb import Catalog

    ds, train, _, _ = hub
    db = tmp_path / "hub.db"
    with Catalog(db) as cat:
        cat.sync(ds.records)
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text("\n".join(json.dumps({"id": q.id, "query": q.text, "relevant": sorted(q.relevant)})
                                  for q in train[:48]) + "\n", encoding="utf-8")
    res = _cli("tune", "--db", str(db), "--queries", str(labelled), "--out", str(tmp_path / "m"),
               "--epochs", "1", "--holdout", "0.25", "--negatives", "router", "--json")
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["held_out"] + report["examples"] == 48 and 0 < report["held_out"] < 24
    assert set(report["recall@5_before"]) == {"dense", "hybrid"}
    assert all(0 <= v <= 1 for v in [*report["recall@5_before"].values(), *report["recall@5_after"].values()])
    saved = json.loads((tmp_path / "m" / "toolsift-tune.json").read_text())
    assert report["weights"] == saved["router"]["weights"] and saved["router"]["chosen_on"] == report["held_out"]
    assert saved["base_model"] == "toolsift-general-minilm"  # users' labels tune on top of the shipped encoder
    assert report["weights"][1] in (0.6, 0.7, 0.8, 0.9)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".m-")]  # no temp folder left

    assert saved["config"]["negatives"] == "router"
    res = _cli("tune", "--db", str(db), "--queries", str(labelled), "--out", str(tmp_path / "m3"), "--negatives", "hard")
    assert res.returncode == 2 and res.stderr.strip().splitlines()[-1].startswith("error: --negatives: use in-batch")
    assert "Traceback" not in res.stderr

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "1", "query": "x", "relevant": ["torchhub/nope"]}\n', encoding="utf-8")
    res = _cli("tune", "--db", str(db), "--queries", str(bad), "--out", str(tmp_path / "m2"))
    assert res.returncode == 2 and res.stderr.strip().count("\n") == 0
    assert "line 1: field 'relevant': 'torchhub/nope' is not" in res.stderr and "Traceback" not in res.stderr


def test_proxy_routes_request_tools_with_the_tuned_model(hub):
    """`serve openai --model DIR`: tool lists that come with requests are routed by the tuned
    encoder (real openai client → real proxy → scripted upstream)."""
    import re

    import openai

    from apidb.loaders.openai import records_from_openai_tools
    from router.middleware.app import create_app
    from router import Router
    from tests.support.scripted_upstream import ScriptedUpstream, completion, offered_names
    from tests.support.servers import ServerThread

    ds, train, out, _ = hub
    tools = [r.to_openai_tool(name=re.sub(r"[^A-Za-z0-9_-]", "_", r.id)[:64]) for r in ds.records]
    recs = records_from_openai_tools(tools, namespace="request")
    tuned, base = Router(recs, model=str(out)), Router(recs)

    def top(router, text):
        return {s.record.name for s in router.select(text, k=3, method="dense")}

    query = next(q.text for q in train if top(tuned, q.text) != top(base, q.text))
    with ScriptedUpstream([completion("ok")]) as up:
        app = create_app(up.base_url, None, k=3, method="dense", model=str(out))
        with ServerThread(app) as srv:
            c = openai.OpenAI(api_key="sk-test", base_url=f"{srv.url}/v1", max_retries=0)
            c.chat.completions.create(model="m", messages=[{"role": "user", "content": query}], tools=tools)
    assert set(offered_names(up.chat_requests[-1])) == top(tuned, query) != top(base, query)
