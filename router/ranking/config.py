"""Retrieval settings (`RouterConfig`) and the defaults a model folder brings with it.

A folder written by `toolsift tune` records the hybrid fusion weights chosen for it in
``toolsift-tune.json``; `config_for_model` reads them so that the tuned model and its weights
always travel together. Lives apart from the engine so the tuner can write what the engine
reads without the two importing each other.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import text as rtext
from ..encoders.model import BUNDLED, DEFAULT_MODEL

TUNE_FILE = "toolsift-tune.json"  # marks a folder `toolsift tune` wrote (safe to replace)
METHODS = ("hybrid", "bm25", "dense")


@dataclass(frozen=True)
class RouterConfig:
    """Retrieval settings. Defaults were chosen on data by benchmarks/retrieval/targets.py, on the
    dev half of the queries of StableToolBench (4 files, 2,231-endpoint corpus) and APIBench
    (3 hubs); objective = mean(STB nDCG@5, APIBench Recall@5). Grid: field weights name {1,2,3}
    x tags {1,2} x params {0,1} (BM25, best three re-scored hybrid); then wsum bm25 weight
    {0.4,0.5,0.6} x group_boost {0,1,2} and RRF k {30,60}; then sub-query splitting on/off.
    Chosen (dev objective 0.618, vectors of the current passages): name 3, wsum 0.4/0.6,
    group_boost 1 (0: 0.609), no split, each query term counted once (0.614 without).
    0.5/0.5 scored 0.615 (better on StableToolBench, worse on APIBench); RRF 0.600-0.606;
    splitting ~0.55 (it pulls in weak tools for fragments). Last stage: sentence matching 0.628 vs
    0.618 off. Each stage keeps the current default unless another choice beats it by > 0.001
    (name weight 1 scored 0.61790 vs 0.61785 for 3: kept 3). Full tables: benchmarks/results/router_targets/report.md."""

    field_weights: dict[str, int] = field(default_factory=lambda: dict(rtext.DEFAULT_FIELD_WEIGHTS))
    fusion: str = "wsum"                 # "wsum" (min-max normalized) or "rrf"
    weights: tuple[float, float] = (0.4, 0.6)  # (bm25, dense)
    rrf_k: float = 60.0
    # How deep each retriever's list goes into fusion; wsum min-max normalizes each list over
    # this many, so it also sets how far a score is from the list's floor. The general encoder
    # has its own (GENERAL_ENCODER_DEPTH).
    depth: int = 100
    split: bool = False                  # sub-query splitting of multi-request queries
    split_merge: str = "interleave"      # how sub-query rankings merge: "interleave" or "rrf"
    # Hybrid only: each tool's fused score gains group_boost x the best fused score among
    # tools of the same group (endpoints of one API: metadata tool_name / tool / server).
    # Endpoints of one API tend to be needed together (ToolBench gold sets); measured in the grid.
    group_boost: float = 1.0
    # Count each query word once: long, chatty requests repeat words ("weather ... weather")
    # that say little about which tool is wanted. Measured in the grid's last stage.
    unique_query_terms: bool = True
    # Hybrid only: a query of several sentences also matches tools sentence by sentence: the
    # dense input becomes cos(query) + max(cos(query), cos(each sentence)). Long requests that
    # ask for two tools in two sentences are poorly served by one query vector. Measured in
    # the grid's last stage (benchmarks/retrieval/targets.py).
    sentence_max: bool = True
    max_sentences: int = 6
    # Sentence vectors: "spans" = mean of each sentence's tokens from ONE pass over the whole
    # query (costs one encode); "separate" = each sentence encoded on its own (1 + n texts:
    # all queries STB nDCG@5 0.769 vs 0.761 for spans, but hybrid p50 at 20k tools 38 ms vs 26).
    sentence_vectors: str = "spans"
    # Candidates for the sentence scores: the whole query's top ``sentence_pool`` (one faiss
    # scan of the catalog); 0 = union of each vector's own top list (one scan per vector,
    # ~1 ms each at 20k tools). Same figures on every benchmark set for 0 and 400.
    sentence_pool: int = 400
    # What `toolsift bench routing` measures and chose (docs/routing.md); router.ranking.shaping applies them.
    # Multi-part requests (router.ranking.coverage): xQuAD weight of the parts, 0 = off; the top
    # ``coverage_pool`` of the fused ranking are re-ordered.
    coverage: float = 0.3
    coverage_pool: int = 30
    # What cuts a request into parts besides sentences and chaining connectives: () = only those (the split
    # before issue 38); router.ranking.coverage.RULES adds "and" before a request verb or a question,
    # numbered steps and lists. `toolsift bench routing --only parts` (200 requests per file, cross-fitted)
    # kept () on both halves: the rules find more parts (MetaTool multi left whole 0.375 -> 0.255,
    # LiveMCPBench 0.595 -> 0.392) but with coverage 0.3 over the top 30 no file's all-gold@10 rose.
    clause_rules: tuple[str, ...] = ()
    exact_names: bool = True             # a tool the query names goes first (router.ranking.exact_names)
    # Abstain when the best raw cosine of the request (or a part) with a top tool is below this
    # (router.ranking.abstain); None = never.
    abstain_below: float | None = 0.25
    # Adaptive k (router.ranking.adaptive_k): keep tools of strength >= ratio x the top one, at most the
    # ceiling (the caller's k when adaptive k is asked for with a k, else this).
    adaptive_ratio: float = 0.6
    adaptive_ceiling: int = 10
    # Complete sets (router.ranking.companions): the weight of each kind of tool relation
    # (apidb.relations; 0 = that kind off), how many of the first tools anchor companions, and how
    # many first places never move. Chosen cross-fitted by `toolsift bench routing --only companions`
    # (the kinds the records say first, with no co-use, as a new catalog has none; then co-use on top):
    # the untuned MiniLM's choice; the general encoder has its own (GENERAL_COMPANIONS, below).
    companion_same_api: float = 0.6
    companion_same_category: float = 0.0
    companion_produces_for: float = 0.6
    companion_feeds: float = 0.0
    companion_co_use: float = 0.6
    # how widely the learned co-use pairs name a tool, whatever the anchor (kind "used"; nothing
    # without a usage log); chosen with co-use, on top of it, on both halves
    companion_used: float = 0.3
    companion_anchors: int = 5
    companion_keep: int = 5
    # Each part of a multi-part request brings its best ``part_tools`` tools right after the first
    # ``companion_keep`` places (router.ranking.part_tools; 0 = off), ranked by ``part_signal``:
    # "bm25" (the part's words; no encoder work) or "hybrid" (also each part encoded apart: about a
    # second encoder pass over an agent's request). Chosen cross-fitted by `toolsift bench routing
    # --only parts` (docs/routing.md).
    part_tools: int = 1
    part_signal: str = "bm25"
    # A part's tool is placed only when its cosine with the part's vector (pooled from the request's
    # one encoder pass) is at least this (None: no floor): a part that asks for nothing otherwise
    # brings whatever shares a word with it. The general encoder's own (GENERAL_PART_FLOOR), chosen
    # cross-fitted by `toolsift bench routing --only companions` (docs/routing.md); the untuned MiniLM,
    # whose cosines sit on another scale, has none.
    part_floor: float | None = None
    # A part also brings its next tool when that tool's own score is at least this share of its best
    # tool's (None: never): near-namesakes the part's words cannot tell apart (router.ranking.part_tools).
    part_tie: float | None = None
    # Adaptive k sends each part's own tool whenever it is in the ceiling's places, after the tools
    # the cut keeps (router.ranking.shaping): the cut weighs a tool against the whole request, the
    # wrong yardstick for a tool that is there for one part. Measured by `toolsift bench routing
    # --only companions` (all gold sent and tokens, with and without; docs/routing.md).
    adaptive_part_tools: bool = True
    # A file the request sends its result to ("save it to /root/out/report.md") is one more part, ranked
    # by the words of what it asks for: writing a file (router.ranking.output_file).
    output_file: bool = False
    # A date the request gives relative to now ("tomorrow", "next Wednesday", "the last 24h") is one
    # more part, ranked by the words of what it asks for: the current date (router.ranking.relative_time).
    relative_time: bool = False

    @property
    def companion_weights(self) -> dict[str, float]:
        return {"same_api": self.companion_same_api, "same_category": self.companion_same_category,
                "produces_for": self.companion_produces_for, "feeds": self.companion_feeds,
                "co_use": self.companion_co_use, "used": self.companion_used}


def tuned_weights(model_id: str) -> tuple[float, float] | None:
    """The fusion weights recorded in a tuned model folder, if any."""
    if model_id in BUNDLED:
        return None
    path = Path(model_id) / TUNE_FILE
    if not path.is_file():
        return None
    try:
        w = json.loads(path.read_text(encoding="utf-8"))["router"]["weights"]
        return (float(w[0]), float(w[1]))
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None


# The shipped general encoder fuses each retriever's top 50, not top 100. On a catalog of fewer
# than 100 tools the dense list at depth 100 is the whole catalog, so its min-max floor is the
# least related tool and the dense scores of the plausible ones crowd near 1, while BM25's list
# holds only the tools sharing a word: BM25 decides. Chosen cross-fitted by `toolsift bench
# general-encoder` (benchmarks/retrieval/general_fusion.py): the dev half picks 50 (the test half 70;
# either, scored on the other half, beats 100), TorchHub Recall@5 0.403 -> 0.478 for TF Hub 0.637 -> 0.615; a model
# trained without a family loses up to 0.004 nDCG@5 on it (APIBench more: benchmarks/README.md).
# The untuned MiniLM keeps 100, the depth its defaults were chosen with (benchmarks/retrieval/targets.py).
GENERAL_ENCODER_DEPTH = 50
# The general encoder's companion weights (RouterConfig.companion_*) and floor for each part's own tool
# (RouterConfig.part_floor): the dev half's choice by `toolsift bench routing --only companions`
# (benchmarks/routing/companions.py, part_floor.py), made on the dev half's requests as ranked by the
# half model that did not train on them. Chosen with the half model that did, on requests it had
# learned, the structural kinds came out 0: the encoder already ranked those sets' companions high.
# The untuned MiniLM keeps RouterConfig's own, its dev-half choice.
GENERAL_COMPANIONS = {"companion_same_api": 0.3, "companion_same_category": 0.0, "companion_produces_for": 0.3,
                      "companion_feeds": 0.0, "companion_co_use": 0.6, "companion_used": 0.2}
GENERAL_PART_FLOOR = 0.35
# ... and the tie for each part's next tool (RouterConfig.part_tie), chosen after the floor the same way
# (benchmarks/routing/part_tie.py)
GENERAL_PART_TIE = 0.8
# ... and a part for the file a request writes to (RouterConfig.output_file), chosen after the tie the same way
GENERAL_OUTPUT_FILE = True
# ... and a part for a date the request gives relative to now (RouterConfig.relative_time), chosen after that:
# both halves turn it on (dev 0.8101 -> 0.8186, test 0.8330 -> 0.8357)
GENERAL_RELATIVE_TIME = True


def general_encoder_config(base: RouterConfig | None = None) -> RouterConfig:
    """``base`` (default: the defaults) with the general encoder's own fusion depth, companion
    weights, part floor, part tie and implied steps' parts (an output file, a relative date)."""
    return replace(base or RouterConfig(), depth=GENERAL_ENCODER_DEPTH, part_floor=GENERAL_PART_FLOOR,
                   part_tie=GENERAL_PART_TIE, output_file=GENERAL_OUTPUT_FILE,
                   relative_time=GENERAL_RELATIVE_TIME, **GENERAL_COMPANIONS)


def config_for_model(model: str | None) -> RouterConfig:
    """The defaults for a model: the fusion weights `toolsift tune` chose for a tuned model
    folder; the general encoder's fusion depth for the default model (``None``)."""
    weights = tuned_weights(model) if model else None
    if weights:
        return RouterConfig(weights=weights)
    return general_encoder_config() if (model or DEFAULT_MODEL) == DEFAULT_MODEL else RouterConfig()
