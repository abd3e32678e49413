"""Training the general tool encoder: which labelled queries, which recipe, which folds.

One recipe makes every model of issue 18's general encoder: the shipped one (trained on every
family's queries) and the two cross-fitting models whose figures the benchmarks report (each
trained on one half of every dataset's queries, by the same sha1 draw `router_targets` uses for
its dev/test halves, and scoring only the other half). APIBench TorchHub trains on its
published training split in every model, so its evaluation questions are never trained on.

Per dataset at most ``PER_DATASET`` (query, tool) pairs (a seeded draw), and at most ``PER_TOOL``
per tool: the large sets (MetaTool's 3,972 queries, Seal-Tools' 3,728 pairs) would otherwise
drown the small catalogs, and a few popular models most of a hub's questions.
Batches are grown along the base router's hard negatives within one dataset
(router.training.tune_batches); word embeddings stay frozen so the model ships as a low-rank delta
(router.encoders.general_encoder).
"""
from __future__ import annotations

import hashlib
import json
import random
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from ..data.halves import half_of

# The benchmark families and their datasets: each is trained on, scored, or left out as a whole.
FAMILIES: dict[str, tuple[str, ...]] = {
    "stabletoolbench": tuple(f"stabletoolbench_{f}" for f in ("G1_instruction", "G1_category", "G1_tool",
                                                              "G2_instruction")),
    "apibench": ("apibench_torchhub", "apibench_tensorflowhub", "apibench_huggingface"),
    "metatool": ("metatool_single", "metatool_multi"),
    "restbench": ("restbench_tmdb", "restbench_spotify"),
    "livemcpbench": ("livemcpbench",),
    "seal_tools": ("seal_tools",),
    "bfcl_live": ("bfcl_live_multiple",),
}
# Caps on the pairs each dataset gives. 1,200 per dataset and 40 per tool, not 600 and 10: a
# multi-tool request counts against every tool it names, so 10 per tool left MetaTool multi 142 of
# its 492 dev-half pairs, and 600 cut Seal-Tools to 600 of 1,965. Cross-fitted, mean hybrid nDCG@5
# 0.638 -> 0.649 (up on 11 of 14, MetaTool multi 0.759 -> 0.802; the three falls, HuggingFace,
# G1 tool and TorchHub, at most 0.007, within retraining noise) and Recall@5 up on 13, down on none.
# Earlier, 600 over 300 lifted StableToolBench 0.801 -> 0.811.
PER_DATASET = 1200
PER_TOOL = 40  # pairs per tool per dataset: TF Hub has 688 questions for 80 models, a few models most of them
HALVES = ("dev", "test")


def recipe() -> Any:
    from router.training.tune import TuneConfig

    # two epochs (tune's default) over one: cross-fitted, every family's nDCG@5 went up
    # (StableToolBench 0.795 -> 0.801, RestBench 0.604 -> 0.630), at twice the training time
    return TuneConfig(epochs=2, negatives="router", freeze_embeddings=True)


def training_pairs(half: str | None = None, per_dataset: int = PER_DATASET, seed: int = 0,
                   leave_out: str | None = None, only: tuple[str, ...] | None = None,
                   ) -> tuple[list[Any], list[tuple[str, str]], list[str], dict[str, int]]:
    """(records, (query, record id) pairs, dataset of each pair, pairs per dataset) for the
    queries of ``half`` ("dev"/"test"; None = all) of every dataset (or of the datasets ``only``
    names), the family ``leave_out`` skipped."""
    from ..data.datasets import apibench_training, load_dataset

    rng = random.Random(seed)
    records, examples, groups, seen, counts = [], [], [], set(), {}
    for family, names in FAMILIES.items():
        if family == leave_out:
            continue
        for name in names:
            if only is not None and name not in only:
                continue
            d = load_dataset(name)
            if name == "apibench_torchhub":
                queries = list(apibench_training("torchhub"))
            else:
                queries = [q for q in d.queries if half is None or half_of(q.id, name) == half]
            rng.shuffle(queries)
            ids = {r.id for r in d.records}
            for r in d.records:
                if r.id not in seen:
                    seen.add(r.id)
                    records.append(r)
            pairs: list[tuple[str, str]] = []
            per_tool: dict[str, int] = {}
            for q in queries:
                mine = [(q.text, rid) for rid in sorted(q.relevant) if rid in ids]
                if any(per_tool.get(rid, 0) >= PER_TOOL for _, rid in mine):
                    continue
                if len(pairs) + len(mine) > per_dataset:
                    break
                for _, rid in mine:
                    per_tool[rid] = per_tool.get(rid, 0) + 1
                pairs += mine
            examples += pairs
            groups += [name] * len(pairs)
            counts[name] = len(pairs)
    return records, examples, groups, counts


def train(half: str | None = None, per_dataset: int = PER_DATASET, leave_out: str | None = None,
          only: tuple[str, ...] | None = None) -> tuple[str, dict[str, Any]]:
    """The tuned folder for this half (trained now unless cached by its spec), and its spec."""
    from router.encoders.model import BASE_MODEL
    from router.training.tune import tune

    config = recipe()
    records, examples, groups, counts = training_pairs(half, per_dataset, leave_out=leave_out, only=only)
    folder = _folder(examples, groups, config)
    info = {"half": half, "leave_out": leave_out, "pairs": len(examples), "trained_on": counts,
            "records": len(records), "config": vars(config), "spec": folder.name}
    if not (folder / "config.json").is_file():
        which = f"all but {leave_out}" if leave_out else (f"the {half} half" if half else "every family")
        with _training_progress(f"training on {which}: {len(examples):,} pairs") as (on_start, on_step):
            report = tune(records, examples, folder, base_model=BASE_MODEL, config=config, groups=groups,
                          on_start=on_start, on_step=on_step)
        info["seconds"] = report.seconds
    else:  # the run that trained it recorded its time (router.training.tune's toolsift-tune.json)
        from router.ranking.config import TUNE_FILE

        saved = json.loads((folder / TUNE_FILE).read_text(encoding="utf-8"))
        info["seconds"], info["cached"] = saved.get("seconds"), True
    return str(folder), info


def _folder(examples: list[tuple[str, str]], groups: list[str], config: Any) -> Path:
    """Where the model of this training spec is cached (``<cache>/general/<sha of the spec>``)."""
    from router.encoders.dense import default_cache_dir

    spec = json.dumps([examples, groups, vars(config)], sort_keys=True)
    return default_cache_dir() / "general" / hashlib.sha256(spec.encode()).hexdigest()[:12]


def cached(half: str | None, per_dataset: int = PER_DATASET, leave_out: str | None = None) -> str | None:
    """The folder ``train(half, per_dataset, leave_out)`` returns if an earlier run trained it, else
    None (for the quick benchmarks, which must not start tens of minutes of training)."""
    _, examples, groups, _ = training_pairs(half, per_dataset, leave_out=leave_out)
    folder = _folder(examples, groups, recipe())
    return str(folder) if (folder / "config.json").is_file() else None


@contextmanager
def _training_progress(what: str) -> Iterator[tuple[Callable[[int], None], Callable[[float], None]]]:
    """A bar on stderr while a model trains (tens of minutes); where stderr is not a terminal
    (a background run's log) the bar is off, so one line says what is training and how many steps."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    console = Console(stderr=True)
    with Progress(TextColumn(what), BarColumn(), MofNCompleteColumn(), TextColumn("loss {task.fields[loss]}"),
                  TimeRemainingColumn(), console=console, transient=True,
                  disable=not console.is_terminal) as progress:
        task = progress.add_task("train", total=0, loss="-")

        def on_start(steps: int) -> None:
            progress.update(task, total=steps)
            if not console.is_terminal:
                console.print(f"{what}, {steps:,} training steps", highlight=False)

        yield on_start, lambda loss: progress.update(task, advance=1, loss=f"{loss:.3f}")


SHIPPED_RANK = 64  # of each weight matrix's change; see build_shipped


def shipped_form(folder: str, rank: int = SHIPPED_RANK) -> str:
    """``folder`` as it would ship: its rank-``rank`` delta over the base model, merged again
    (``<cache>/models/toolsift-general-minilm-<delta sha>``). Benchmarks score this form, so their
    figures include what the truncation loses."""
    from router.encoders.general_encoder import build_delta, materialize
    from router.encoders.model import BASE_MODEL, model_path

    delta = Path(folder) / f"toolsift-delta-r{rank}.npz"
    if not delta.is_file():
        build_delta(model_path(BASE_MODEL), folder, delta, rank)
    return materialize(model_path(BASE_MODEL), delta)


def build_shipped(per_dataset: int | None = None, rank: int = SHIPPED_RANK) -> dict[str, Any]:
    """Train on every family's queries (all of them, no half) and write the shipped delta.

    Rank 64 is ~5 MB. Measured on stop 25's model tuned without StableToolBench (scored on its
    G2 file, torch encoder): hybrid nDCG@5 base 0.731, full fine-tune 0.767, its rank-64 delta
    0.768, rank 128 0.768 — though rank 64 keeps only ~0.89 of the change's Frobenius norm (the
    rest is spread thin over many directions that retrieval does not need). `bench general-encoder`
    scores the cross-fitting models in this same rank-64 form, so its figures include the loss."""
    from router.encoders.general_encoder import DELTA_FILE, build_delta, delta_sha
    from router.encoders.model import BASE_MODEL, model_path

    folder, info = train(None, per_dataset or PER_DATASET)
    kept = build_delta(model_path(BASE_MODEL), folder, DELTA_FILE, rank,
                       info={k: info[k] for k in ("pairs", "trained_on", "config", "spec")})
    shipped = ship_onnx()
    return {**info, **kept, "rank": rank, "path": str(DELTA_FILE), "bytes": DELTA_FILE.stat().st_size,
            "sha": delta_sha(), "onnx": shipped}


def ship_onnx() -> dict[str, Any]:
    """Export the shipped delta's merged model and ship its int8 graph (router/data/general_encoder/),
    so that a fresh install routes with it without converting anything (router.encoders.shipped)."""
    from router.encoders.model import DEFAULT_MODEL, folder_fingerprint, model_path
    from router.encoders.shipped import write_shipped

    folder = model_path(DEFAULT_MODEL)
    return write_shipped(folder, folder_fingerprint(folder))


if __name__ == "__main__":  # python -m benchmarks.retrieval.general_training [dev|test|all|ship]
    import sys

    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    print(ship_onnx() if which == "ship" else train(None if which == "all" else which), flush=True)
