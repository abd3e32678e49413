"""Fine-tune the dense encoder on labelled queries (query → the tool that answers it).

A general sentence encoder does not know that "make a picture from my words" means a
text-to-image model; a few hundred labelled queries from the same kind of catalog teach it.
This is the step ToolLLM's retriever takes (fine-tuned Sentence-BERT), and what the Gorilla
hubs need (benchmarks/retrieval/tuning.py measures it on APIBench without scoring any question with a
model that saw it).

Training pairs each query with the passage the router embeds for its tool, and uses the other
tools of the batch as negatives (sentence-transformers' MultipleNegativesRankingLoss). The
result is a sentence-transformers folder: pass it as the model (`--model DIR`,
``Router(model=DIR)``). Its identity for caches and indexes includes a fingerprint of its
files, so re-tuning into the same folder never reuses vectors of the old weights.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from apidb.record import ApiRecord

from ..ranking.config import TUNE_FILE, RouterConfig
from ..encoders.dense import DEFAULT_MODEL, fresh_model
from ..ranking.engine import Router
from ..errors import RouterError
from ..text import record_passage



@dataclass
class TuneConfig:
    """Training settings. The defaults are the common ones for fine-tuning a sentence encoder
    with in-batch negatives, set before any measurement and not searched on the benchmark's
    questions (two epochs keep a run of ~1k queries within a few minutes on 2 cores)."""

    epochs: int = 2
    batch_size: int = 32
    learning_rate: float = 3e-5
    seed: int = 0
    # "in-batch": shuffled batches; "router": batches grown along the base router's hard
    # negatives (router.training.tune_batches), so in-batch negatives are tools the router confuses
    negatives: str = "in-batch"
    # keep the word-embedding matrix (11.7 M of MiniLM's 22.7 M weights) as it is: the general
    # encoder ships only a low-rank delta of the transformer layers (router.encoders.general_encoder)
    freeze_embeddings: bool = False


@dataclass
class TuneReport:
    out: str
    base_model: str
    examples: int
    epochs: int
    steps: int
    seconds: float
    config: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def _batches(pairs: list[tuple[str, int]], size: int, rng: random.Random) -> list[list[tuple[str, int]]]:
    """Shuffled batches in which no tool and no query appears twice: a second copy would be
    scored as a negative of its own positive."""
    pending = pairs[:]
    rng.shuffle(pending)
    out: list[list[tuple[str, int]]] = []
    while pending:
        batch, tools, texts, rest = [], set(), set(), []
        for q, i in pending:
            if len(batch) < size and i not in tools and q not in texts:
                batch.append((q, i)); tools.add(i); texts.add(q)
            else:
                rest.append((q, i))
        out.append(batch)
        pending = rest
    return out


def _check(records: Sequence[ApiRecord], examples: Sequence[tuple[str, str]], cfg: TuneConfig) -> list[tuple[str, int]]:
    if cfg.epochs < 1 or cfg.batch_size < 2 or cfg.learning_rate <= 0:
        raise RouterError("tune: epochs must be >= 1, batch size >= 2 and the learning rate > 0")
    if cfg.negatives not in ("in-batch", "router"):
        raise RouterError(f"tune: negatives must be 'in-batch' or 'router', got {cfg.negatives!r}")
    index = {r.id: i for i, r in enumerate(records)}
    pairs = []
    for n, (text, rid) in enumerate(examples, 1):
        if rid not in index:
            raise RouterError(f"tune: example {n} names tool {rid!r}, which is not in the catalog")
        if not text or not text.strip():
            raise RouterError(f"tune: example {n} has an empty query")
        pairs.append((text, index[rid]))
    if len(pairs) < 2:
        raise RouterError(f"tune: needs at least 2 labelled examples, got {len(pairs)}")
    if len({i for _, i in pairs}) < 2:
        raise RouterError("tune: all examples name the same tool; in-batch negatives need at least 2 tools")
    return pairs


def tune(records: Sequence[ApiRecord], examples: Sequence[tuple[str, str]], out: str | os.PathLike[str], *,
         base_model: str = DEFAULT_MODEL, config: TuneConfig | None = None,
         groups: Sequence[str] | None = None, on_start: Callable[[int], None] | None = None, on_step: Callable[[float], None] | None = None) -> TuneReport:
    """Fine-tune ``base_model`` on ``examples`` (query text, record id) and save it to ``out``.

    ``out`` is replaced only when training finished: the model is written to a temporary
    folder beside it and renamed. ``on_start(total_steps)`` and ``on_step(loss)`` report progress.
    ``groups`` (one label per example, e.g. its dataset) keeps router-grown batches within a group.
    """
    cfg = config or TuneConfig()
    pairs = _check(records, examples, cfg)
    dest = Path(out)
    check_destination(dest)
    t0 = time.perf_counter()
    import torch
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    model = fresh_model(base_model)  # the shared instance in router.encoders.dense keeps the base weights
    if cfg.freeze_embeddings:
        model[0].auto_model.embeddings.word_embeddings.weight.requires_grad_(False)
    loss_fn = MultipleNegativesRankingLoss(model)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=cfg.learning_rate)
    passages = {i: record_passage(records[i]) for _, i in pairs}
    plan = _plan(records, pairs, cfg, rng, groups, base_model)
    if on_start:
        on_start(sum(len(p) for p in plan))
    model.train()
    steps = 0
    for epoch in plan:
        for batch in epoch:
            features = [model.preprocess([q for q, _ in batch]), model.preprocess([passages[i] for _, i in batch])]
            loss = loss_fn(features, torch.zeros(len(batch)))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            steps += 1
            if on_step:
                on_step(float(loss.detach()))
    model.eval()
    report = TuneReport(str(dest), base_model, len(pairs), cfg.epochs, steps, 0.0, asdict(cfg))
    _save(model, dest, report, t0)
    _export_onnx(dest, [q for q, _ in pairs[:64]] + list(passages.values())[:128])
    return report


def _plan(records: Sequence[ApiRecord], pairs: list[tuple[str, int]], cfg: TuneConfig, rng: random.Random,
          groups: Sequence[str] | None, base_model: str) -> list[list[list[tuple[str, int]]]]:
    if cfg.negatives == "in-batch":
        return [_batches(pairs, cfg.batch_size, rng) for _ in range(cfg.epochs)]
    from .tune_batches import mine_hard_negatives, router_batches

    queries: dict[str, set[int]] = {}
    for q, i in pairs:
        queries.setdefault(q, set()).add(i)
    hard = mine_hard_negatives(records, queries, base_model)
    group = dict(enumerate(groups)) if groups is not None else None
    return [router_batches(pairs, cfg.batch_size, rng, hard, group) for _ in range(cfg.epochs)]


def _export_onnx(dest: Path, texts: list[str]) -> None:
    """Export the tuned folder for the ONNX encoder now, while torch is loaded anyway, checked on
    the tuning's own queries and passages. A failure only means the first use exports (or falls
    back to torch), so it is a warning, not an error."""
    import warnings

    from ..encoders.dense import prepare_onnx

    try:
        prepare_onnx(str(dest), texts)
    except Exception as exc:
        warnings.warn(f"ONNX export of {dest} failed ({exc}); the encoder will fall back to torch", stacklevel=2)


def check_destination(dest: Path) -> None:
    """Refuse to replace anything but an earlier tuned model (checked before any work)."""
    if dest.exists() and (not dest.is_dir() or (any(dest.iterdir()) and not (dest / TUNE_FILE).is_file())):
        raise RouterError(f"{dest}: exists and is not a folder written by `toolsift tune`; "
                          "choose a new --out (it is replaced only if it holds an earlier tuned model)")
    try:  # a folder that cannot be written is said now, not after the training
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.rmdir(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}-probe-"))
    except OSError as exc:
        raise RouterError(f"{dest}: cannot write the tuned model there ({exc.strerror or exc})") from None


def check_numbers(learning_rate: float, seed: int) -> None:
    """The numeric options, checked before any work: a NaN or infinite rate trained a model of
    NaN weights (exit 0) or failed deep inside torch; a seed past 64 bits was a traceback."""
    import math

    if not (math.isfinite(learning_rate) and learning_rate > 0):
        raise RouterError(f"--learning-rate must be a positive finite number, got {learning_rate}")
    if not 0 <= seed < 2**32:
        raise RouterError(f"--seed must be from 0 to {2**32 - 1}, got {seed}")


def _save(model, dest: Path, report: TuneReport, t0: float) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}-"))
    try:
        model.save(str(tmp))
        report.seconds = round(time.perf_counter() - t0, 1)
        (tmp / TUNE_FILE).write_text(json.dumps(report.to_dict(), indent=1), encoding="utf-8")
        old = None
        if dest.exists():
            old = dest.with_name(f".{dest.name}-old-{os.getpid()}")
            os.replace(dest, old)
        os.replace(tmp, dest)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _recall(router, labelled: Sequence[tuple[str, set[str]]], method: str, k: int = 5) -> float:
    hits = []
    for text, relevant in labelled:
        got = {s.record.id for s in router.select(text, k=k, method=method)}
        hits.append(len(got & relevant) / len(relevant))
    return round(sum(hits) / len(hits), 4) if hits else 0.0


def recall_at(records: Sequence[ApiRecord], labelled: Sequence[tuple[str, set[str]]], model: str, *,
              k: int = 5, methods: Sequence[str] = ("dense", "hybrid")) -> dict[str, float]:
    """Mean Recall@k of ``model`` (with its own fusion weights) on (query, relevant ids), per method."""
    router = Router(list(records), model=model)
    return {method: _recall(router, labelled, method, k) for method in methods}


# Dense weight of the hybrid's weighted-score fusion, the shipped default first. A tuned encoder
# is much stronger than the BM25 side, so its best share is higher (TorchHub, benchmarks/retrieval/tuning.py).
# Capped below 1.0: with no BM25 share it would no longer be a hybrid.
WEIGHT_GRID = (0.6, 0.7, 0.8, 0.9)


def fit_weights(records: Sequence[ApiRecord], labelled: Sequence[tuple[str, set[str]]], model: str,
                grid: Sequence[float] = WEIGHT_GRID) -> tuple[tuple[float, float], dict[float, float]]:
    """The (bm25, dense) fusion weights with the best hybrid Recall@5 on ``labelled`` (queries not
    used in training), and the score of each. Like the router grid, the first (default) setting
    is kept unless another beats it by more than 0.001."""

    base = Router(list(records), model=model, config=RouterConfig())
    scores = {wd: _recall(base.configured(weights=(round(1 - wd, 2), wd)), labelled, "hybrid") for wd in grid}
    best = grid[0]
    for wd in grid[1:]:
        if scores[wd] > scores[best] + 0.001:
            best = wd
    return (round(1 - best, 2), best), scores


def record_weights(folder: str | os.PathLike[str], weights: tuple[float, float], scores: dict[float, float],
                   n: int) -> None:
    """Store the chosen fusion weights in the folder's toolsift-tune.json (atomically)."""
    path = Path(folder) / TUNE_FILE
    info = json.loads(path.read_text(encoding="utf-8"))
    info["router"] = {"weights": list(weights), "chosen_on": n,
                      "hybrid_recall@5_by_dense_weight": {str(k): v for k, v in scores.items()}}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tune-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(info, fh, indent=1)
    os.replace(tmp, path)


def split_holdout(ids: Sequence[str], fraction: float) -> set[str]:
    """The ids held out from training: a fixed hash draw, so reruns hold out the same queries."""
    if not 0 <= fraction < 1:
        raise RouterError(f"--holdout must be in [0, 1), got {fraction}")
    return {i for i in ids if int(hashlib.sha1(i.encode()).hexdigest(), 16) % 10_000 < fraction * 10_000}
