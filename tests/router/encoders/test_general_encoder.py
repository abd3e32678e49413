"""The shipped general encoder (issue 18): the base MiniLM plus a small delta, merged on first use,
the default model, and the base model one flag away."""
from __future__ import annotations

import json
import os

import numpy as np

from tests.conftest import shared
from tests.support.cli import toolsift


def test_the_delta_is_small_and_merging_it_is_deterministic(tmp_path, monkeypatch):
    from router.encoders.general_encoder import DELTA_FILE, delta_info, materialize
    from router.encoders.model import BASE_MODEL, folder_fingerprint, model_path

    assert DELTA_FILE.stat().st_size <= 10 * 1024 * 1024  # the ceiling for what ships
    info = delta_info()
    assert info["rank"] >= 1 and info["pairs"] > 1000 and len(info["trained_on"]) == 14
    folders = []
    for name in ("a", "b"):  # two caches: the same files, hence the same fingerprint (and ONNX export)
        monkeypatch.setenv("TOOLSIFT_CACHE", str(tmp_path / name))
        folders.append(materialize(model_path(BASE_MODEL)))
    assert folders[0] != folders[1]
    assert folder_fingerprint(folders[0]) == folder_fingerprint(folders[1])
    assert not [p for p in (tmp_path / "a" / "models").iterdir() if p.name.startswith(".toolsift")
                and not p.name.endswith(".lock")]  # no temporary folder left behind


def test_build_delta_round_trips_the_merged_weights(tmp_path):
    """Re-deriving a delta from the merged model gives back the same weights (fp16 tolerance):
    what `bench general-encoder --build` writes is what the loader adds."""
    from safetensors.numpy import load_file

    from router.encoders.general_encoder import WEIGHTS, build_delta, delta_info, merged_weights
    from router.encoders.model import BASE_MODEL, DEFAULT_MODEL, model_path

    base, general = model_path(BASE_MODEL), model_path(DEFAULT_MODEL)
    out = tmp_path / "again.npz"
    kept = build_delta(base, general, out, delta_info()["rank"])
    assert kept["matrix_norm_kept"] > 0.999  # the merged change is already of that rank
    again, shipped = merged_weights(base, out), load_file(os.path.join(general, WEIGHTS))
    name = "encoder.layer.3.intermediate.dense.weight"
    assert np.abs(again[name] - shipped[name]).max() < 1e-3
    assert np.abs(shipped[name] - load_file(os.path.join(base, WEIGHTS))[name]).max() > 1e-3  # it changed


def test_the_general_encoder_beats_the_base_model_on_queries_it_never_saw():
    """MetaTool single-tool queries that were not among the training pairs (the shipped model
    drew 1,200 of 3,972): dense Recall@5 with the shipped encoder against the untuned MiniLM."""
    shared("metatool", "data", "all_clean_data.csv")
    from benchmarks.data.datasets import load_dataset
    from benchmarks.retrieval.general_training import training_pairs
    from router import Router
    from router.encoders.model import BASE_MODEL

    d = load_dataset("metatool_single")
    seen = {q for q, _ in training_pairs(None)[1]}
    unseen = [q for q in d.queries if q.text not in seen][::9][:300]
    assert len(unseen) == 300

    def recall(model: str) -> float:
        r = Router(d.records, model=model)
        return float(np.mean([bool({s.record.id for s in r.select(q.text, k=5, method="dense")} & q.relevant)
                              for q in unseen]))

    base, general = recall(BASE_MODEL), recall("toolsift-general-minilm")
    assert general >= base + 0.02, (base, general)


def test_route_uses_the_general_encoder_and_the_base_model_is_one_flag_away(gorilla_db, tmp_path):
    assert toolsift("index", db=gorilla_db).returncode == 0
    manifest = json.loads((gorilla_db.parent / "catalog.db.index" / "manifest.json").read_text())
    assert manifest["model"] == "toolsift-general-minilm"
    default = toolsift("route", "detect objects in a street photo", "-k", "3", "--json", db=gorilla_db)
    assert default.returncode == 0, default.stderr
    assert json.loads(default.stdout)["tools"][0]["dense_score"] is not None
    # the index was built with the default: routing with the base model needs its own index
    base = toolsift("route", "detect objects", "--model", "all-MiniLM-L6-v2", db=gorilla_db)
    assert base.returncode == 2 and "built with model 'toolsift-general-minilm'" in base.stderr
    assert "Traceback" not in base.stderr
    base_db = tmp_path / "base.db"
    base_db.write_bytes(gorilla_db.read_bytes())
    assert toolsift("index", "--model", "all-MiniLM-L6-v2", db=base_db).returncode == 0
    routed = toolsift("route", "detect objects in a street photo", "-k", "3", "--json", db=base_db)
    assert routed.returncode == 0, routed.stderr
    scores = [t["dense_score"] for t in json.loads(routed.stdout)["tools"]]
    assert scores != [t["dense_score"] for t in json.loads(default.stdout)["tools"]]  # another encoder


def test_an_unknown_model_names_both_bundled_ones(gorilla_db):
    done = toolsift("index", "--model", "no-such-model", db=gorilla_db)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "toolsift-general-minilm" in done.stderr and "all-MiniLM-L6-v2" in done.stderr


def test_vectors_are_keyed_by_the_shipped_delta():
    """Caches and index manifests key vectors by identity: a new delta is a new model."""
    from router.encoders.general_encoder import delta_sha
    from router.encoders.model import model_identity

    assert model_identity("toolsift-general-minilm") == f"toolsift-general-minilm@{delta_sha()}"
    assert model_identity("all-MiniLM-L6-v2") == "all-MiniLM-L6-v2"
