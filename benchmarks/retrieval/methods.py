"""The retrieval methods the benchmark compares, behind one small interface.

A method is built once per corpus (`build(records)`), then asked for the top-k
record ids of each query (`search(text, k)`). Build time and peak memory are
measured around `build`; latency around each `search`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from apidb.record import ApiRecord

from ..errors import MethodError


class Searcher(Protocol):
    def search(self, text: str, k: int) -> list[str]: ...


@dataclass(frozen=True)
class MethodSpec:
    name: str
    kind: str  # "rank_bm25" | "router" | "oracle"
    label: str
    select: dict[str, Any] = field(default_factory=dict)   # Router.select keyword arguments
    config: dict[str, Any] = field(default_factory=dict)   # RouterConfig changes (same indexes)
    uniform_fields: bool = False  # BM25 index built with every field weight 1 (a separate router)
    single: bool = False  # a single retriever (hybrid rows are tested against these)


# Every row of the comparison. Router options are separate rows so their effect is visible.
METHODS: dict[str, MethodSpec] = {m.name: m for m in (
    MethodSpec("rank_bm25", "rank_bm25", "rank-bm25 BM25Okapi, plain word tokens", single=True),
    MethodSpec("bm25", "router", "router BM25 (bm25s, stemmed, field-weighted)", {"method": "bm25"}, single=True),
    MethodSpec("bm25_uniform", "router", "router BM25, field weighting off", {"method": "bm25"},
               uniform_fields=True),
    MethodSpec("dense", "router", "router dense (MiniLM + faiss)", {"method": "dense"}, single=True),
    MethodSpec("hybrid_wsum", "router", "router hybrid, weighted-score fusion", {"method": "hybrid"},
               {"fusion": "wsum"}),
    MethodSpec("hybrid_rrf", "router", "router hybrid, RRF fusion", {"method": "hybrid"}, {"fusion": "rrf"}),
    MethodSpec("hybrid_split", "router", "router hybrid (default fusion) + sub-query splitting",
               {"method": "hybrid", "split": True}),
    MethodSpec("oracle", "oracle", "oracle: gold first (the ceiling of each metric)"),
)}
DEFAULT_METHODS = tuple(METHODS)
_WORDS = re.compile(r"\w+")


def record_text(record: ApiRecord) -> str:
    """The text every lexical method sees: the router's fields, concatenated."""
    try:
        from router.text import record_fields
    except ImportError:  # router not installed: name + description + parameter names
        props = (record.parameters or {}).get("properties") or {}
        return " ".join([record.name, record.namespace, record.description, *map(str, props)])
    return " ".join(v for v in record_fields(record).values() if v)


class RankBM25:
    """What users pick today: rank-bm25 BM25Okapi over lower-cased word tokens."""

    def __init__(self, records: list[ApiRecord]) -> None:
        from rank_bm25 import BM25Okapi

        self.ids = [r.id for r in records]
        self.bm25 = BM25Okapi([_WORDS.findall(record_text(r).lower()) for r in records])

    def search(self, text: str, k: int) -> list[str]:
        import numpy as np

        scores = self.bm25.get_scores(_WORDS.findall(text.lower()))
        top = np.argsort(-scores, kind="stable")[:k]
        return [self.ids[i] for i in top if scores[i] > 0]


class RouterSearch:
    """A `router.Router` over the corpus, asked with fixed `select` options."""

    def __init__(self, router: Any, select: dict[str, Any]) -> None:
        self.router = router
        self.options = select

    def search(self, text: str, k: int) -> list[str]:
        return [s.record.id for s in self.router.select(text, k=k, **self.options)]


class Oracle:
    """Gold first: shows the ceiling of each metric (e.g. Recall@1 <= 1/|gold|)."""

    def __init__(self, gold: dict[str, set[str]]) -> None:
        self.gold = gold

    def search(self, text: str, k: int) -> list[str]:
        return sorted(self.gold.get(text, ()))[:k]


def router_class() -> Any:
    """`router.Router`, or None when the router package is not importable yet."""
    try:
        from router import Router
    except ImportError:
        try:
            from router import Router
        except ImportError:
            return None
    return Router


def build_router(records: list[ApiRecord], uniform_fields: bool = False, dense: bool = True,
                 encoder: str | None = None, model: str | None = None) -> Any:
    """A router over ``records`` with its indexes built (the dense one, when asked, from the
    shared embedding cache), so build time covers everything a first query would otherwise pay.
    ``encoder``: the router's encoder (None: $TOOLSIFT_ENCODER, default ONNX); ``model``: None is
    the untuned MiniLM (the shipped general encoder trained on the benchmark data's queries)."""
    Router = router_class()
    if Router is None:
        raise MethodError("the router package is not importable")
    if uniform_fields:
        from router import RouterConfig
        from router.text import DEFAULT_FIELD_WEIGHTS

        cfg = RouterConfig(field_weights={f: 1 for f in DEFAULT_FIELD_WEIGHTS})
        return Router.from_records(records, config=cfg)  # BM25 only: no dense build needed
    from router.encoders.model import BASE_MODEL

    router = Router.from_records(records, encoder=encoder, model=model or BASE_MODEL)
    if dense:
        _dense_with_progress(router)
    return router


def _dense_with_progress(router: Any) -> None:
    """Build the dense index; a progress bar on stderr while passages no cache holds are encoded
    (issue 14: minutes of embedding behind one silent line)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True)
    with Progress(TextColumn("embedding"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=console, transient=True, disable=not console.is_terminal) as progress:
        task = progress.add_task("embed", total=0)
        router.dense_index(on_start=lambda n: progress.update(task, total=n),
                           on_batch=lambda n: progress.advance(task, n))


def default_fusion() -> str | None:
    try:
        from router import RouterConfig
    except ImportError:
        return None
    return RouterConfig().fusion


def one_torch_thread() -> None:
    """Encode with one torch thread for the whole benchmark process. Router.select already
    runs each query on one thread (router.encoders.dense.intra_op_threads); this also covers the
    benchmarks' own encodes outside select, as in the committed runs.

    Measured on this shared 2-CPU machine at load ~6: one MiniLM query took 105 ms p50 /
    734 ms p95 with torch's default 2 threads and 30 / 42 ms with one (spinning intra-op
    threads starve when other processes hold the CPUs). Cold-cache document encoding is
    slower with one thread, but it is cached and happens once.
    """
    import torch

    torch.set_num_threads(1)
