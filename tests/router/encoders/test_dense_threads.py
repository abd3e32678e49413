"""Thread counts: one query is encoded and searched on one torch thread; batch encodes
(index builds) keep torch's setting, even in a thread that already served queries.
These are the torch encoder's rules (the reference path); the ONNX encoder has fixed
single-threaded query sessions (tests/router/encoders/test_onnx_encoder.py)."""
from __future__ import annotations

import numpy as np
import pytest

from router.index.vector_index import DenseIndex


@pytest.fixture
def two_threads():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(2)  # the default on this 2-core machine; forced so 1-CPU hosts test it too
    yield 2
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def hub_router(torchhub_records, emb_cache):
    """TorchHub with the torch encoder (the session's hub_router uses the default, ONNX)."""
    from router import Router

    r = Router.from_records(torchhub_records, cache_dir=emb_cache, encoder="torch")
    r.dense_index()
    return r


def _spy_encode(monkeypatch, model) -> list[tuple[int, int]]:
    """(texts, torch threads) for every model.encode call."""
    import torch

    seen: list[tuple[int, int]] = []
    real = model.encode

    def spy(texts, *a, **kw):
        seen.append((len(texts), torch.get_num_threads()))
        return real(texts, *a, **kw)

    monkeypatch.setattr(model, "encode", spy)
    return seen


def test_query_encodes_on_one_thread_and_restores(hub_router, two_threads, monkeypatch):
    import torch

    seen = _spy_encode(monkeypatch, hub_router.embedder.model)
    sel = hub_router.select("a model that segments objects in street photos", k=3)
    assert sel and sel[0].dense_score is not None
    assert seen == [(1, 1)]  # the one query, on one thread
    assert torch.get_num_threads() == two_threads  # put back for whatever runs next


def test_batch_encode_after_queries_keeps_torch_threads(hub_router, two_threads, monkeypatch):
    hub_router.select("classify the birds in my garden camera images", k=3)
    DenseIndex(np.eye(4, 384, dtype=np.float32))  # building an index must not pin this thread to 1
    seen = _spy_encode(monkeypatch, hub_router.embedder.model)
    vecs = hub_router.embedder.encode(["first tool text", "second tool text", "third tool text"])
    assert vecs.shape == (3, 384)
    assert seen == [(3, two_threads)]
