"""The ONNX Runtime encoder against the torch reference, on real passages (the bundled Gorilla
API records), and the rules around it: exports keyed by fingerprint, vector spaces, no torch
on the query path."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT

# Per-vector cosine to the torch encoder (issue #15: >= 0.99). fp32 is the same computation in
# another runtime (measured min 0.99999+); int8 measured min 0.993-0.996 on these passages.
FP32_TOL, INT8_TOL = 0.9999, 0.99


@pytest.fixture(scope="module")
def passages(gorilla_records):
    """Every 4th bundled Gorilla record (267 real passages: TorchHub, TF Hub, HuggingFace)."""
    from router.text import record_passage

    return [record_passage(r) for r in gorilla_records[::4]]


@pytest.fixture(scope="module")
def torch_vectors(passages):
    from router.encoders.dense import Embedder

    return Embedder(encoder="torch").encode(passages)


@pytest.mark.parametrize("encoder,tol", [("onnx-fp32", FP32_TOL), ("onnx-int8", INT8_TOL)])
def test_onnx_agrees_with_torch_on_real_passages(passages, torch_vectors, encoder, tol):
    from router.encoders.dense import Embedder
    from router.encoders.onnx_encoder import OnnxEncoder

    emb = Embedder(encoder=encoder)
    assert isinstance(emb.model, OnnxEncoder) and emb.backend == encoder
    vecs = emb.encode(passages)
    assert vecs.shape == torch_vectors.shape and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1, atol=1e-5)
    cos = np.sum(vecs * torch_vectors, axis=1)
    assert cos.min() >= tol, f"{encoder}: min cosine {cos.min():.5f} (mean {cos.mean():.5f})"
    # a query (single-threaded session) equals the same text encoded in a batch
    one = emb.encode_query(passages[0])
    assert float(one[0] @ vecs[0]) > 0.9999


@pytest.mark.parametrize("dataset", ["stabletoolbench_G1_instruction", "livemcpbench", "bfcl_live_multiple"])
def test_int8_agrees_with_torch_beyond_its_calibration_passages(dataset):
    """The int8 recipe takes its activation ranges from bundled Gorilla passages: on catalogs it
    never saw (real StableToolBench, LiveMCPBench, BFCL tools) each vector still stays within
    the issue's 0.99 cosine of torch, whether encoded as a document (a build) or as a query."""
    from benchmarks.data.datasets import available, load_dataset
    from router.encoders.dense import Embedder
    from router.text import record_passage

    if not available(dataset):
        pytest.skip(f"real data not available: benchmark catalog {dataset} is absent (set TOOLSIFT_SHARED_DATA)")
    texts = [record_passage(r) for r in load_dataset(dataset).records[::7][:120]]
    ref = Embedder(encoder="torch").encode(texts)
    emb = Embedder(encoder="onnx-int8")
    docs = emb.encode(texts)
    cos = np.sum(docs * ref, axis=1)
    assert cos.min() >= INT8_TOL, f"{dataset}: min cosine {cos.min():.5f} (mean {cos.mean():.5f})"
    # a build's document vector is the same text's query vector (each text runs alone)
    queries = emb.encode_queries(texts[:10])
    assert np.abs(queries - docs[:10]).max() < 1e-6


def test_spans_match_the_torch_encoder():
    from router.encoders.dense import Embedder, encode_with_spans
    from router.ranking.query import sentence_spans

    text = ("I'm hosting a cocktail party and I need some cocktail recipes. Can you suggest some cocktail "
            "recipes that contain vodka? Also, provide me with a cake recipe from The Birthday Cake DB.")
    spans = sentence_spans(text)
    ref = encode_with_spans(Embedder(encoder="torch").model, text, spans)
    got = encode_with_spans(Embedder(encoder="onnx-fp32"), text, spans)
    assert got.shape == ref.shape == (1 + len(spans), 384)
    assert np.sum(got * ref, axis=1).min() > 0.9999


def test_int8_and_fp32_vectors_live_in_separate_caches(tmp_path):
    from router.encoders.dense import shared_cache, vector_space
    from router.encoders.onnx_export import INT8_SPACE

    assert vector_space("torch") == vector_space("onnx-fp32") == "fp32"
    assert vector_space("onnx") == vector_space("onnx-int8") == INT8_SPACE
    fp32 = shared_cache(tmp_path, "all-MiniLM-L6-v2", "torch")
    assert shared_cache(tmp_path, "all-MiniLM-L6-v2", "onnx-fp32") is fp32
    int8 = shared_cache(tmp_path, "all-MiniLM-L6-v2", "onnx-int8")
    assert int8 is not fp32 and int8.path != fp32.path and int8.model_id != fp32.model_id


def test_unknown_encoder_is_refused(monkeypatch):
    from router import Router, RouterError
    from router.encoders.dense import resolve_encoder

    monkeypatch.setenv("TOOLSIFT_ENCODER", "torch")
    assert resolve_encoder() == "torch" and resolve_encoder("onnx-fp32") == "onnx-fp32"
    monkeypatch.setenv("TOOLSIFT_ENCODER", "tensorrt")
    with pytest.raises(RouterError, match="unknown encoder"):
        resolve_encoder()
    from apidb.record import ApiRecord

    with pytest.raises(RouterError, match="unknown encoder"):
        Router([ApiRecord(id="ns/a", namespace="ns", name="a", description="a tool")], encoder="cuda")


def _folder(tmp_path: Path, modules: list[str], pooling: str = "pooling_mode_mean_tokens") -> Path:
    d = tmp_path / "model"
    (d / "1_Pooling").mkdir(parents=True)
    (d / "tokenizer.json").write_text("{}")
    (d / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 128}))
    (d / "modules.json").write_text(json.dumps(
        [{"idx": i, "name": str(i), "path": "" if i == 0 else f"{i}_{m}", "type": f"sentence_transformers.models.{m}"}
         for i, m in enumerate(modules)]))
    (d / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 384, pooling: True}))
    return d


def test_only_plain_mean_pooled_folders_are_exported(tmp_path):
    from router.encoders.onnx_encoder import UnsupportedModel, folder_config

    ok = _folder(tmp_path / "a", ["Transformer", "Pooling", "Normalize"])
    assert folder_config(ok)["max_seq_length"] == 128
    with pytest.raises(UnsupportedModel, match="Dense"):
        folder_config(_folder(tmp_path / "b", ["Transformer", "Pooling", "Dense"]))
    with pytest.raises(UnsupportedModel, match="pooling"):
        folder_config(_folder(tmp_path / "c", ["Transformer", "Pooling"], "pooling_mode_cls_token"))
    # the format sentence-transformers 6 writes (a folder `toolsift tune` saved)
    new = _folder(tmp_path / "d", ["Transformer", "Pooling", "Normalize"])
    (new / "1_Pooling" / "config.json").write_text(json.dumps({"embedding_dimension": 384, "pooling_mode": "mean"}))
    assert folder_config(new)["dim"] == 384
    (new / "1_Pooling" / "config.json").write_text(json.dumps({"embedding_dimension": 384, "pooling_mode": "max"}))
    with pytest.raises(UnsupportedModel, match="max"):
        folder_config(new)


def test_export_is_keyed_by_fingerprint_and_done_once(tmp_path, monkeypatch):
    """A folder written again gets a new export; concurrent callers share one export."""
    from router.encoders import onnx_export

    monkeypatch.setenv("TOOLSIFT_CACHE", str(tmp_path / "cache"))
    calls = []

    def fake_export(model_dir, fingerprint, directory, texts):
        calls.append(fingerprint)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / onnx_export.FP32).write_bytes(b"onnx")
        meta = {"version": onnx_export.EXPORT_VERSION, "fingerprint": fingerprint, "int8": False}
        (directory / onnx_export.META).write_text(json.dumps(meta))
        return meta

    monkeypatch.setattr(onnx_export, "_export", fake_export)
    threads = [threading.Thread(target=onnx_export.ensure_export, args=("/models/m", "aaaa")) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == ["aaaa"]
    d1, meta = onnx_export.ensure_export("/models/m", "aaaa")
    d2, _ = onnx_export.ensure_export("/models/m", "bbbb")  # re-tuned: new fingerprint
    assert calls == ["aaaa", "bbbb"] and d1 != d2 and meta["fingerprint"] == "aaaa"
    (d2 / onnx_export.META).write_text("{half")  # an unreadable export is redone
    onnx_export.ensure_export("/models/m", "bbbb")
    assert calls == ["aaaa", "bbbb", "bbbb"]


def test_retuned_folder_changes_the_onnx_key(tmp_path):
    from router.encoders.dense import folder_fingerprint

    d = tmp_path / "m"
    d.mkdir()
    (d / "model.safetensors").write_bytes(b"old weights")
    before = folder_fingerprint(d)
    (d / "model.safetensors").write_bytes(b"new weights, longer")
    assert folder_fingerprint(d) != before


def test_routing_with_an_exported_model_never_imports_torch(gorilla_db, tmp_path):
    """A fresh process that opens an index built with the ONNX encoder and routes imports
    onnxruntime, tokenizers, numpy and faiss, and none of torch / transformers /
    sentence-transformers (their import alone took ~7 s)."""
    from router.encoders.dense import Embedder
    from router.index.build import build_index

    Embedder(encoder="onnx").model  # the export exists before the fresh process starts
    build_index(gorilla_db, encoder="onnx")
    code = ("import sys, json\nfrom router import Router\n"
            f"r = Router.open({str(gorilla_db)!r}, encoder='onnx')\n"
            "sel = r.select('classify sports activities in videos', k=3)\n"
            "print(json.dumps({'top': sel[0].record.id, 'dense': sel[0].dense_score, 'warnings': r.warnings,\n"
            "  'heavy': sorted(m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules),\n"
            "  'loaded': sorted(m for m in ('onnxruntime', 'tokenizers', 'faiss') if m in sys.modules)}))\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["heavy"] == [] and res["loaded"] == ["faiss", "onnxruntime", "tokenizers"]
    assert res["dense"] is not None and not res["warnings"]
    manifest = json.loads((Path(str(gorilla_db) + ".index") / "manifest.json").read_text())
    from router.encoders.onnx_export import INT8_SPACE

    assert manifest["encoder"] == "onnx-int8" and manifest["vectors"] == INT8_SPACE
    assert manifest["dense_index"]["kind"] == "flat"
    # int8 document vectors are never searched with torch (fp32) query vectors: stale, said so
    from router import Router

    import numpy as np

    from router import text as rtext
    from router.index.vector_store import vector_cache

    # The fp32 vectors of these records must exist for the rebuild: the shipped ones are int8, and
    # the user cache holds fp32 ones only if an earlier run happened to embed them with torch (a
    # fresh machine has none), so embed them here (the user cache keeps them for later runs).
    Router.from_records(Router.open(gorilla_db, encoder="onnx").records, encoder="torch").dense_index()
    r = Router.open(gorilla_db, encoder="torch")
    assert any(f"{INT8_SPACE} vectors" in w for w in r.warnings)
    dense = r.dense_index()  # built again from fp32 vectors, row for row
    keys = [rtext.embedding_key(rec) for rec in r.records[:50]]
    fp32 = np.vstack(vector_cache(r.model_id, "torch").get_many(keys))
    int8 = np.vstack(vector_cache(r.model_id, "onnx-int8").get_many(keys))
    assert np.allclose(dense.vectors[:50], fp32, atol=2e-3)
    assert not np.allclose(dense.vectors[:50], int8, atol=2e-3)


def test_a_folder_saved_by_sentence_transformers_truncates_where_torch_does(tmp_path):
    """sentence-transformers 6 writes the truncation length only into the tokenizer's config (the
    folders `toolsift tune` makes); the ONNX encoder must read passages exactly as far as torch."""
    from router.encoders.model import BASE_MODEL, fresh_model
    from router.encoders.onnx_encoder import folder_config

    model = fresh_model(BASE_MODEL)
    model.save(str(tmp_path / "saved"))
    assert "max_seq_length" not in json.loads((tmp_path / "saved" / "sentence_bert_config.json").read_text())
    assert folder_config(tmp_path / "saved")["max_seq_length"] == model.max_seq_length == 256
