"""The dense index: flat below FLAT_MAX vectors, HNSW above, same answers where it matters."""
from __future__ import annotations

import numpy as np
import pytest

from router.index import vector_index
from router.index.vector_index import DenseIndex


@pytest.fixture(scope="module")
def vectors():
    """3,000 unit vectors in 60 tight clusters (like catalog replicas: many near-duplicates)."""
    rng = np.random.default_rng(7)
    centers = rng.normal(size=(60, 64))
    v = centers[rng.integers(0, 60, 3000)] + rng.normal(scale=0.15, size=(3000, 64))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def test_kind_follows_the_size(monkeypatch, vectors):
    monkeypatch.setattr(vector_index, "FLAT_MAX", 1000)
    assert DenseIndex(vectors[:1000]).kind == "flat"
    big = DenseIndex(vectors)
    assert big.kind == "hnsw" and big.describe()["kind"] == "hnsw" and big.describe()["ef_search"] >= 100


def test_hnsw_finds_what_flat_finds(vectors):
    flat, hnsw = DenseIndex(vectors, kind="flat"), DenseIndex(vectors, kind="hnsw")
    queries = vectors[::97] + 0.05
    hits = []
    for q in queries:
        exact, exact_s = flat.search(q, 10)
        got, got_s = hnsw.search(q, 10)
        hits.append(len(set(exact) & set(got)) / 10)
        assert np.allclose(got_s, hnsw.score(q, got), atol=1e-5)  # scores are exact cosines
    assert np.mean(hits) >= 0.99
    # asking for more than efSearch still returns that many
    assert len(hnsw.search(queries[0], 400)[0]) == 400


def test_filtered_search_is_exact_on_a_small_allowed_set(vectors):
    flat, hnsw = DenseIndex(vectors, kind="flat"), DenseIndex(vectors, kind="hnsw")
    allowed = np.arange(5, 3000, 7)
    q = vectors[42]
    a, sa = flat.search(q, 20, allowed)
    b, sb = hnsw.search(q, 20, allowed)
    assert list(a) == list(b) and np.allclose(sa, sb, atol=1e-6)
    assert set(b) <= set(allowed)
    assert len(hnsw.search(q, 5, np.array([], dtype=np.int64))[0]) == 0


def test_hnsw_survives_write_and_read(tmp_path, vectors):
    hnsw = DenseIndex(vectors, kind="hnsw")
    hnsw.write(tmp_path / "dense.faiss")
    back = DenseIndex.read(tmp_path / "dense.faiss", len(vectors))
    assert back.kind == "hnsw" and np.array_equal(back.vectors, hnsw.vectors)
    q = vectors[3]
    assert list(back.search(q, 10)[0]) == list(hnsw.search(q, 10)[0])
    parts = vectors[[10, 20]]
    docs, _ = back.search_with_parts(q, parts, 10, pool=50)
    assert len(docs) == 10


def test_cosines_is_the_matrix_product_of_rows_and_queries():
    """cosines() computes rows @ queries.T one query at a time (issue 39: OpenBLAS's threaded
    product cost a long request ~8 ms under load); same values, same shape, for 1-8 queries."""
    import numpy as np

    from router.index.vector_index import cosines

    rng = np.random.default_rng(0)
    rows = rng.normal(size=(400, 384)).astype(np.float32)
    for m in (1, 2, 4, 8):
        q = rng.normal(size=(m, 384)).astype(np.float32)
        got = cosines(rows, q)
        assert got.shape == (400, m) and got.dtype == np.float32
        assert np.allclose(got, rows @ q.T, rtol=1e-5, atol=1e-4)
    assert np.allclose(cosines(rows, q[0]), rows @ q[0][:, None], rtol=1e-5, atol=1e-4)  # one vector, 1-D
