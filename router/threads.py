"""Thread counts for one-query work (a query encode through torch, a faiss search).

Imported before torch or faiss: libgomp reads OMP_WAIT_POLICY when it first loads.
"""
from __future__ import annotations

import contextlib
import os

# OpenMP threads that spin while waiting turn a 12 ms query encode into ~1 s when the two
# cores are shared with other work (measured: 969 ms p50 vs 47 ms with PASSIVE). libgomp reads
# this when torch or faiss first loads it, so it is set here, before either is imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


@contextlib.contextmanager
def intra_op_threads(n: int):
    """Run the block with ``n`` intra-op threads in the calling thread, then restore the count.

    One query is too small to split across threads. On the shared 2 cores (load ~3.3), hybrid
    ``Router.select`` over the 1,069 Gorilla records took p50 35.4 / p95 88 ms with torch's 2
    threads and 26.9 / 68 ms with one (paired, same process); without OMP_WAIT_POLICY=PASSIVE
    one encode took 74-125 ms vs 16-20 ms. A faiss search of one query: 16 ms vs ~2 ms (see
    ../shared/notes/embedding.md). Batch encoding (index builds) keeps torch's own setting.
    torch and faiss share one libgomp, whose thread count is per calling thread, so setting it
    here leaves other threads' queries and builds alone; torch is used when it is loaded (it
    also sets MKL's count), faiss's OpenMP call otherwise (no multi-second torch import).
    """
    import sys

    torch = sys.modules.get("torch")
    if torch is not None:
        get, put = torch.get_num_threads, torch.set_num_threads
    else:
        import faiss

        get, put = faiss.omp_get_max_threads, faiss.omp_set_num_threads
    prev = get()
    if prev == n:
        yield
        return
    put(n)
    try:
        yield
    finally:
        put(prev)
