"""The Router (the routing engine): picks the few relevant tools for a request, with explanations.

``Router.open(db)`` uses the catalog and the indexes ``toolsift index`` persisted next
to it; ``Router.from_records(records)`` builds an in-memory router for an ad-hoc tool list
(the middleware's case), reusing embeddings cached by (model id, content hash).
Its dense side (router.ranking.dense_side) and the assembly of the chosen tools into
selections (router.ranking.assembly) are mixed in from their own modules.
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Collection, Iterable, Sequence

import numpy as np

from apidb.record import ApiRecord

from .. import text as rtext
from .adaptive_k import AdaptiveK
from .assembly import SelectionAssembly
from .companions import RelationGraph, stored_co_use
from .config import METHODS, RouterConfig, config_for_model
from .coverage import clause_spans
from .dense_side import DenseSide
from .output_file import with_outputs
from .relative_time import with_relative_date
from ..encoders.dense import DEFAULT_MODEL, Embedder, default_cache_dir, intra_op_threads, resolve_encoder
from ..errors import RouterError
from .exact_names import NameTable
from .fusion import Ranking, fuse, interleave, rrf
from ..index.lexical import LexicalIndex
from ..index.vector_index import DenseIndex
from .query import normalize_query, sentence_spans, split_query
from .selection import SelectionList
from .shaping import Parts, part_signals, shape

_GROUP_KEYS = ("tool_name", "tool", "server")


def _groups(records: Sequence[ApiRecord]) -> np.ndarray | None:
    """Group id per record (-1: none), or None when no record has a group or none shares one."""
    ids: dict[tuple[str, str], int] = {}
    out = np.full(len(records), -1, dtype=np.int64)
    for i, r in enumerate(records):
        key = next((str(r.metadata[k]) for k in _GROUP_KEYS if r.metadata.get(k)), None)
        if key is not None:
            out[i] = ids.setdefault((r.namespace, key), len(ids))
    return out if 0 < len(ids) < len(records) else None


class Router(DenseSide, SelectionAssembly):
    """Hybrid BM25 + dense retrieval over a fixed set of records (see the module doc)."""

    def __init__(self, records: Sequence[ApiRecord], *, model: str | None = None,
                 lexical: LexicalIndex | None = None, dense: DenseIndex | None = None,
                 cache_dir: str | os.PathLike[str] | None = None, dense_enabled: bool = True,
                 config: RouterConfig | None = None, warnings: Iterable[str] = (), encoder: str | None = None) -> None:
        if not records:
            raise RouterError("no tools to route over (the catalog or tool list is empty)")
        self.config = config or config_for_model(model)
        self.records = list(records)
        self.model_id = model or DEFAULT_MODEL
        # "onnx" (default), "onnx-int8", "onnx-fp32" or "torch"; None reads $TOOLSIFT_ENCODER
        self.encoder = resolve_encoder(encoder)
        self.warnings: list[str] = list(warnings)
        self._index = {r.id: i for i, r in enumerate(self.records)}
        if len(self._index) != len(self.records):
            dup = next(r.id for i, r in enumerate(self.records) if self._index[r.id] != i)
            raise RouterError(f"duplicate record id {dup!r} in the tool list")
        self._by_name: dict[str, list[int]] = {}
        for i, r in enumerate(self.records):
            for key in {r.name, r.openai_name()}:
                self._by_name.setdefault(key, []).append(i)
        self._ns_names = sorted({r.namespace for r in self.records})
        ns_code = {ns: j for j, ns in enumerate(self._ns_names)}
        self._ns = np.array([ns_code[r.namespace] for r in self.records], dtype=np.int32)
        self._group = _groups(self.records)
        self.lexical = lexical or LexicalIndex.build(rtext.batch_tokens(self.records, self.config.field_weights))
        self._dense = dense
        self._dense_enabled = dense_enabled or dense is not None
        self._cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        self._index_cache: Path | None = None  # <catalog>.index/cache for a router opened on a catalog
        self._embedder: Embedder | None = None
        self._tool_tokens: dict[str, int] = {}
        self._field_memo: dict[int, list[tuple[str, frozenset[str]]]] = {}  # see SelectionAssembly._fields_of
        self._names: NameTable | None = None
        self._name_memo: dict | None = None  # a previous router's normalized names (router.ranking.watch)
        self.co_use: list = []  # learned co-use relations (apidb.relations), e.g. the catalog's
        self._relations: RelationGraph | None = None

    # ---- construction ----------------------------------------------------------------
    @classmethod
    def open(cls, db_path: str | os.PathLike[str] | None = None, *, model: str | None = None,
             index_dir: str | os.PathLike[str] | None = None, config: RouterConfig | None = None,
             encoder: str | None = None, dense: bool = True, watch: bool = False) -> "Router":
        """A router over a catalog file, using the indexes `toolsift index` built next to it.

        Without a usable dense index it falls back to BM25-only and says so in ``.warnings``.
        ``dense=False`` opens BM25 only (no dense file read, faiss not imported).
        ``watch=True``, and any ``postgresql://`` catalog: the routing state comes from what the
        catalog itself stores (vectors, snapshots; nothing is embedded), and with ``watch`` follows
        the catalog's changes without a restart (router.ranking.watch.LiveRouter; ``close()`` stops it).
        """
        from apidb.catalog import is_server_url
        from apidb.location import default_db_path

        location = db_path or default_db_path()
        if watch or is_server_url(location):
            from .watch import open_live

            return open_live(cls, location, model=model, config=config, encoder=encoder, dense=dense,
                             watch=watch, index_dir=index_dir)
        from ..index.build import load_index

        loaded = load_index(db_path, index_dir=index_dir, model=model, config=config, encoder=encoder,
                            with_dense=dense)
        router = cls(loaded.records, model=loaded.model_id, lexical=loaded.lexical, dense=loaded.dense,
                     dense_enabled=loaded.dense is not None, config=config, warnings=loaded.warnings,
                     encoder=loaded.encoder)
        router._index_cache = loaded.cache_dir  # read first; the user-level cache after it
        router.co_use = stored_co_use(db_path or default_db_path(), router.warnings)
        return router

    @classmethod
    def from_records(cls, records: Iterable[ApiRecord], *, model: str | None = None,
                     cache_dir: str | os.PathLike[str] | None = None,
                     config: RouterConfig | None = None, dense: bool = True, encoder: str | None = None) -> "Router":
        """An in-memory router; embeddings are computed on the first dense/hybrid query and
        cached under ``cache_dir`` (default ~/.cache/toolsift, or $TOOLSIFT_CACHE).
        ``dense=False`` gives a BM25-only router that never loads the model."""
        router = cls(list(records), model=model, cache_dir=cache_dir, config=config, dense_enabled=dense,
                     encoder=encoder)
        if not dense:
            router.warnings.append("dense search disabled: BM25 only")
        return router

    def with_records(self, records: Iterable[ApiRecord]) -> "Router":
        """A router over another tool list with this one's model, cache and settings:
        unchanged tools reuse their cached vectors, so only new tools are encoded."""
        router = Router(list(records), model=self.model_id, cache_dir=self._cache_dir, config=self.config,
                        dense_enabled=self._dense_enabled, encoder=self.encoder)
        router._index_cache = self._index_cache
        return router

    # ---- selection -------------------------------------------------------------------
    def relation_graph(self) -> RelationGraph:
        """The tools' relations (router.ranking.companions): built on first use, from the records and
        ``co_use``; ``with_co_use`` gives a router with other learned pairs."""
        if self._relations is None:
            self._relations = RelationGraph.build(self.records, self.co_use)
        return self._relations

    def with_co_use(self, relations: Iterable[Any]) -> "Router":
        """The same router with these learned co-use relations (apidb.relations.co_use_pairs)."""
        clone = self.configured()
        clone.co_use, clone._relations = list(relations), None
        return clone

    def name_table(self) -> NameTable:
        """The records' names for exact-name matching (built on first use)."""
        if self._names is None:
            self._names = NameTable(self.records, self._name_memo)
            self._name_memo = None
        return self._names

    def select(self, query_or_messages: Any, k: int | None = None, *, method: str = "hybrid",
               min_score: float | None = None, pinned: Collection[str] = (),
               include_namespaces: Collection[str] | None = None,
               exclude_namespaces: Collection[str] | None = None, token_budget: int | None = None,
               candidates: Collection[str] | None = None, split: bool | None = None,
               relative_cut: float | None = None, adaptive: bool | AdaptiveK | None = None,
               abstain: str = "flag") -> SelectionList:
        """The top-``k`` tools for a query string or an OpenAI-style messages list.

        ``k`` given: exactly the top ``k`` (a fixed k). ``k`` omitted: adaptive k (router.ranking.adaptive_k)
        up to ``config.adaptive_ceiling`` tools; ``adaptive=True`` (or an `AdaptiveK`) with a ``k``
        makes ``k`` the ceiling; ``adaptive=False`` without ``k`` is the old fixed k of 5.
        A tool the query names goes first (reason "named"); a multi-part request gets the best
        tool of each part (router.ranking.coverage). When no tool fits (router.ranking.abstain) the result's
        ``.abstention`` says so; ``abstain="empty"`` then returns no ranked tools (pinned ones stay).

        Filters (namespaces, ``candidates``) apply before ranking. ``pinned`` tools (ids or
        names) always come first and do not count against ``k``. ``min_score`` compares with
        the method's score (hybrid wsum: 0..1). With ``token_budget`` the selected schemas'
        tokens never exceed it: a top-k tool that does not fit is dropped, and a lower-ranked one
        replaces it only if it scores at least ``relative_cut`` (default 0.5) x the top score
        (router.ranking.budget); the result's ``.budget`` says what was spent and dropped.
        """
        if adaptive is None:
            adaptive = k is None
        if k is None:
            k = self.config.adaptive_ceiling if adaptive else 5
        if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
            raise RouterError(f"k must be a positive integer, got {k!r}")
        if abstain not in ("flag", "empty"):
            raise RouterError(f"abstain must be 'flag' or 'empty', got {abstain!r}")
        cut = None if adaptive is False else adaptive if isinstance(adaptive, AdaptiveK) else \
            AdaptiveK(self.config.adaptive_ratio)
        if method not in METHODS:
            raise RouterError(f"unknown method {method!r}: use one of {', '.join(METHODS)}")
        if token_budget is not None and token_budget <= 0:
            raise RouterError(f"token_budget must be positive, got {token_budget!r}")
        query = normalize_query(query_or_messages)
        pins = self._resolve_pinned(pinned)
        allowed = self._allowed(include_namespaces, exclude_namespaces, candidates)
        if method != "bm25" and self.dense_index() is None:
            method = "bm25"  # the reason is already in self.warnings
        split = self.config.split if split is None else split
        depth = max(self.config.depth, 2 * k + len(pins))
        # The query encode and the faiss search run on one torch/OpenMP thread in this thread
        # (p50 35 → 27 ms under load; see intra_op_threads); builds above keep the default.
        with intra_op_threads(1) if method != "bm25" else contextlib.nullcontext():
            ranking, bm25_all, qvec, parts = self._rank(query, method, allowed, depth, split)
        shaped = shape(self, query, ranking, parts, allowed, method, k, cut, qvec, bm25_all,
                       self.config.abstain_below)
        abstained = shaped.abstention is not None and shaped.abstention.abstained
        out = self._assemble(query, shaped.ranking, bm25_all, qvec, 0 if abstained and abstain == "empty"
                             else shaped.k, pins, min_score, token_budget, relative_cut, set(shaped.named),
                             shaped.companions, shaped.part_tools)
        out.abstention, out.parts = shaped.abstention, shaped.parts
        out.adaptive_k = shaped.k if cut is not None else None
        return out

    def _resolve_pinned(self, pinned: Collection[str]) -> list[int]:
        if isinstance(pinned, str):
            pinned = [pinned]
        out: list[int] = []
        for p in pinned:
            hits = [self._index[p]] if p in self._index else self._by_name.get(p, [])
            if not hits:
                import difflib

                near = difflib.get_close_matches(p, list(self._by_name) + list(self._index), n=3, cutoff=0.7)
                raise RouterError(f"pinned tool {p!r} is not in the catalog"
                                  + (f"; did you mean {' or '.join(near)}?" if near else
                                     " (give a record id or tool name)"))
            out += [h for h in hits if h not in out]
        return out

    def _allowed(self, include: Collection[str] | None, exclude: Collection[str] | None,
                 candidates: Collection[str] | None) -> np.ndarray | None:
        mask = None
        for names, keep in ((include, True), (exclude, False)):
            if names is None:
                continue
            names = [names] if isinstance(names, str) else list(names)
            unknown = [n for n in names if n not in self._ns_names]
            if unknown:
                raise RouterError(f"unknown namespace {unknown[0]!r}; known: {', '.join(self._ns_names[:20])}")
            codes = [self._ns_names.index(n) for n in names]
            hit = np.isin(self._ns, codes)
            m = hit if keep else ~hit
            mask = m if mask is None else mask & m
        if candidates is not None:
            cand = [candidates] if isinstance(candidates, str) else list(candidates)
            unknown = [c for c in cand if c not in self._index]
            if unknown:
                raise RouterError(f"candidate {unknown[0]!r} is not a record id of this catalog")
            m = np.zeros(len(self.records), dtype=bool)
            m[[self._index[c] for c in cand]] = True
            mask = m if mask is None else mask & m
        return mask

    def _bm25_ranking(self, scores: np.ndarray, allowed: np.ndarray | None, depth: int) -> Ranking:
        s = scores if allowed is None else np.where(allowed, scores, 0.0)
        hits = np.flatnonzero(s > 0)
        if len(hits) > depth:
            hits = hits[np.argpartition(-s[hits], depth - 1)[:depth]]
        order = hits[np.lexsort((hits, -s[hits]))]
        return Ranking(order.astype(np.int64), s[order])

    def _rank_one(self, bm25: np.ndarray, qvec: np.ndarray | None, method: str,
                  allowed: np.ndarray | None, depth: int, sentences: np.ndarray | None = None) -> Ranking:
        lex = self._bm25_ranking(bm25, allowed, depth) if method != "dense" else None
        if method == "bm25":
            return lex
        allowed_idx = None if allowed is None else np.flatnonzero(allowed)
        if method == "hybrid" and sentences is not None and len(sentences):
            docs, sims = self._dense.search_with_parts(qvec, sentences, depth, allowed_idx,
                                                       pool=self.config.sentence_pool)
        else:
            docs, sims = self._dense.search(qvec, depth, allowed_idx)
        dense = Ranking(docs.astype(np.int64), sims)
        if method == "hybrid" and hasattr(self._dense, "stand_in"):  # a live catalog's unembedded records
            dense = self._dense.stand_in(lex, dense)
        if method == "dense":
            return dense
        c = self.config
        fused = fuse([lex, dense], c.fusion, list(c.weights), c.rrf_k)
        return self._boost_groups(fused) if c.group_boost and self._group is not None else fused

    def _boost_groups(self, r: Ranking) -> Ranking:
        if not len(r):
            return r
        g = self._group[r.docs]
        best = np.zeros(int(g.max()) + 2)
        np.maximum.at(best, g + 1, r.scores)  # group -1 (no group) lands in slot 0, ignored below
        boost = np.where(g >= 0, best[g + 1], 0.0)
        scores = r.scores + self.config.group_boost * boost
        order = np.lexsort((r.docs, -scores))
        return Ranking(r.docs[order], scores[order])

    def _rank(self, query: str, method: str, allowed: np.ndarray | None, depth: int,
              split: bool) -> tuple[Ranking, np.ndarray, np.ndarray | None, Parts | None]:
        parts = split_query(query) if split else [query]
        clauses = clause_spans(query, rules=self.config.clause_rules) \
            if self.config.coverage > 0 or self.config.part_tools > 0 else []
        words = None
        if self.config.part_tools > 0:  # steps the request implies: only part tools place their tools
            if self.config.output_file:
                clauses, words = with_outputs(query, clauses)
            if self.config.relative_time:
                clauses, words = with_relative_date(query, clauses, words)
        texts = [query] + (parts if len(parts) > 1 else [])
        tok = (lambda t: list(dict.fromkeys(rtext.tokenize(t)))) if self.config.unique_query_terms else rtext.tokenize
        bm25s_ = [self.lexical.scores(tok(t)) for t in texts]
        qvecs = svecs = cvecs = None
        if method != "bm25":
            spans = sentence_spans(query, self.config.max_sentences) \
                if method == "hybrid" and self.config.sentence_max else []
            # one encoder pass pools the sentences and the clauses (router.ranking.coverage) alike
            pooled = sorted(set(spans) | set(clauses))
            if pooled:
                vecs = self.encode_query_sentences(query, pooled, self.config.sentence_vectors)
                rows = dict(zip(pooled, vecs[1:]))  # spans past the encoder's length limit get no row
                svecs = np.array([rows[s] for s in spans if s in rows]).reshape(-1, vecs.shape[1])
                cvecs = np.array([rows[s] for s in clauses if s in rows]).reshape(-1, vecs.shape[1])
                if words and len(cvecs) == len(clauses):  # an implied step's part: the vector of what it asks for
                    cvecs = np.array([row if w is None else self.phrase_vector(w) for row, w in zip(cvecs, words)])
                qvecs = vecs[:1] if len(texts) == 1 else np.vstack([vecs[:1], self.encode_queries(texts[1:])])
            else:
                qvecs = self.encode_queries(texts)
        rankings = [self._rank_one(b, None if qvecs is None else qvecs[i], method, allowed, depth,
                                   svecs if i == 0 else None)
                    for i, b in enumerate(bm25s_)]
        if len(rankings) == 1:
            ranking = rankings[0]
        elif self.config.split_merge == "interleave":
            # each sub-request's best tool first, then the whole query's ranking fills up
            ranking = interleave(rankings[1:] + rankings[:1])
        else:
            ranking = rrf(rankings, self.config.rrf_k)
        part_info = part_signals(self, query, clauses, method, cvecs, words) if clauses else None
        return ranking, bm25s_[0], None if qvecs is None else qvecs[0], part_info

    # ---- misc ------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.records)

    def get(self, record_id: str) -> ApiRecord | None:
        i = self._index.get(record_id)
        return None if i is None else self.records[i]

    def namespaces(self) -> list[str]:
        return list(self._ns_names)

    def configured(self, **changes: Any) -> "Router":
        """The same router with other retrieval settings (same indexes; field weights are
        baked into the BM25 index, so changing them needs a new router)."""
        if "field_weights" in changes:
            raise RouterError("field weights are part of the BM25 index: build a new router")
        clone = object.__new__(Router)
        clone.__dict__.update(self.__dict__)
        clone.config = replace(self.config, **changes)
        return clone
