"""The default encoder ships ready for ONNX Runtime (router/data/general_encoder/, issue 39)."""
from __future__ import annotations

from importlib.util import find_spec

import numpy as np
import pytest


def test_the_shipped_graph_is_made_from_the_shipped_delta():
    """A delta rebuilt without shipping its graph again would route with other weights than the
    model identity says: `shipped_graph` refuses it, and this test names the command to run."""
    from router.encoders.dense import DEFAULT_MODEL, Embedder
    from router.encoders.general_encoder import delta_sha
    from router.encoders.shipped import SHIPPED_DIR, shipped_graph, shipped_meta

    assert shipped_graph() is not None, (f"{SHIPPED_DIR} holds {shipped_meta()}, not the graph of delta "
                                         f"{delta_sha()}: run `python -m benchmarks.retrieval.general_training ship`")
    assert Embedder(DEFAULT_MODEL).model.path == shipped_graph()


def test_a_graph_of_another_delta_is_refused(tmp_path):
    import json
    import shutil

    from router.encoders.shipped import META, SHIPPED_DIR, shipped_graph

    copy = tmp_path / "shipped"
    shutil.copytree(SHIPPED_DIR, copy)
    assert shipped_graph(copy) is not None
    meta = json.loads((copy / META).read_text())
    (copy / META).write_text(json.dumps({**meta, "delta_sha": "000000000000"}))
    assert shipped_graph(copy) is None


@pytest.mark.slow
@pytest.mark.skipif(find_spec("sentence_transformers") is None, reason="the torch reference needs toolsift[train]")
def test_the_shipped_encoder_agrees_with_the_torch_reference():
    """The shipped int8 graph against the merged model in torch, on bundled Gorilla passages and
    short queries: the int8 export's own quality floor (INT8_MIN_COSINE)."""
    from router.encoders.dense import DEFAULT_MODEL, Embedder
    from router.encoders.model import fresh_model
    from router.encoders.onnx_export import INT8_MIN_COSINE, _default_check_texts

    texts = _default_check_texts(40)
    shipped = Embedder(DEFAULT_MODEL).encode(texts)
    ref = fresh_model(DEFAULT_MODEL).encode(texts, normalize_embeddings=True, convert_to_numpy=True,
                                            show_progress_bar=False)
    cos = np.sum(shipped * ref, axis=1)
    assert cos.min() >= INT8_MIN_COSINE, cos.min()


def test_a_long_query_runs_two_threads_when_a_core_is_idle_with_the_same_vector(monkeypatch):
    """An agent-length request's encode takes a second, two-threaded session when a core is free
    (router.encoders.onnx_encoder.idle_cores); its vector is the single-threaded one, so routing
    never depends on the machine's load. Short queries and busy cores stay on one thread."""
    from router.encoders import onnx_encoder
    from router.encoders.shipped import SHIPPED_DIR, shipped_graph

    long_request = ("I am planning a trip to Lisbon next month with my family and need a hotel near the old town. "
                    "Could you also check the weather forecast for those dates and convert 500 US dollars to euros? "
                    "Finally, suggest some restaurants nearby that serve vegetarian food.")
    narrow = onnx_encoder.OnnxEncoder(SHIPPED_DIR, shipped_graph(), wide_queries=False)
    wide = onnx_encoder.OnnxEncoder(SHIPPED_DIR, shipped_graph())
    monkeypatch.setattr(onnx_encoder, "idle_cores", lambda cores: False)
    wide.encode_query(long_request)
    assert wide._wide is None  # busy cores: one thread
    monkeypatch.setattr(onnx_encoder, "idle_cores", lambda cores: True)
    wide.encode_query("weather in Lisbon")
    assert wide._wide is None  # a short query: one thread
    got = wide.encode_query(long_request)
    assert wide._wide is not None
    np.testing.assert_array_equal(got, narrow.encode_query(long_request))
    spans = [(0, 95), (96, 200)]
    np.testing.assert_array_equal(wide.encode_with_spans(long_request, spans),
                                  narrow.encode_with_spans(long_request, spans))
    monkeypatch.setenv("TOOLSIFT_QUERY_THREADS", "1")  # a service that wants one thread per query
    assert not onnx_encoder.OnnxEncoder(SHIPPED_DIR, shipped_graph()).wide_queries
