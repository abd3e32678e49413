"""`toolsift tune`: fine-tune the dense encoder on a catalog and labelled queries.

    toolsift tune --db CATALOG --queries LABELLED.jsonl --out DIR [--holdout 0.2] [--epochs 2]
    toolsift tune --db CATALOG --from-log usage.jsonl --out DIR   # what the proxy / gateway logged
    toolsift index --db CATALOG --model DIR        # then route with the tuned model
    toolsift route "..." --db CATALOG --model DIR

The queries file (see router/training/labelled.py) has the format of `toolsift bench retrieval --queries`: one
{"id", "query" | "messages", "relevant": [tool id or name, ...]} per line.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from router.errors import RouterError

from .options import Db, Json, catalog_path

err = Console(stderr=True)
out_console = Console()


def tune(db: Db = None,
         queries: Optional[Path] = typer.Option(None, "--queries", help="JSONL: {id, query|messages, relevant} per line."),
         from_log: Optional[list[Path]] = typer.Option(None, "--from-log", help="Train on a usage log written by "
                                                       "`serve ... --usage-log` (repeatable; docs/routing.md)."),
         out: Path = typer.Option(..., "--out", help="Folder for the tuned model (replaced only when done)."),
         model: str = typer.Option("toolsift-general-minilm", "--model", help="Base model: a bundled id "
                                    "(toolsift-general-minilm, all-MiniLM-L6-v2) or a local folder."),
         holdout: float = typer.Option(0.2, "--holdout", help="Share of queries kept out of training, to choose the "
                                                              "hybrid's fusion weights and measure Recall@5 before and "
                                                              "after (0 trains on all, default weights)."),
         epochs: int = typer.Option(2, "--epochs", min=1, help="Passes over the training queries."),
         batch_size: int = typer.Option(32, "--batch-size", min=2, help="Queries per training step (each "
                                                                        "batch's other tools are its negatives)."),
         learning_rate: float = typer.Option(3e-5, "--learning-rate", help="Optimizer step size."),
         seed: int = typer.Option(0, "--seed", help="Seed for batch order and torch's randomness (the "
                                                     "holdout is a fixed draw by query id)."),
         negatives: str = typer.Option("in-batch", "--negatives", metavar="in-batch|router",
                                       help="in-batch: shuffled batches; router: batches grown along the "
                                            "tools the starting model's router confuses (hard negatives)"),
         as_json: Json = False) -> None:
    """Fine-tune the embedding model so that your queries find their tools (in-batch negatives)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from router.encoders.model import require_train
    from router.training.labelled import load_labelled
    from router.training.tune import TuneConfig, check_destination, check_numbers, record_weights, split_holdout
    from router.training.tune import tune as run_tune

    require_train("`toolsift tune`")
    check_numbers(learning_rate, seed)
    check_destination(out)
    if negatives not in ("in-batch", "router"):
        raise RouterError(f"--negatives: use in-batch or router, not {negatives!r}")
    if (queries is None) == (not from_log):
        raise RouterError("give --queries FILE or --from-log LOG (one of them)")
    if from_log:
        from router.training.labelled import load_usage_log

        data, found = load_usage_log(catalog_path(db), from_log)
        err.print(found.summary(), highlight=False)
    else:
        data = load_labelled(catalog_path(db), queries)
    held = split_holdout([q.id for q in data.queries], holdout)
    train = [(q.text, rid) for q in data.queries if q.id not in held for rid in sorted(q.relevant)]
    test = [(q.text, set(q.relevant)) for q in data.queries if q.id in held]
    if not train:
        raise RouterError(f"{queries}: every query is held out; lower --holdout")
    before = _measure(data.records, test, model, "base model", as_json)
    with Progress(TextColumn("tuning"), BarColumn(), MofNCompleteColumn(), TextColumn("loss {task.fields[loss]}"),
                  TimeRemainingColumn(), console=err, transient=True, disable=as_json) as progress:
        task = progress.add_task("tune", total=0, loss="-")
        report = run_tune(data.records, train, out, base_model=model,
                          config=TuneConfig(epochs, batch_size, learning_rate, seed, negatives),
                          on_start=lambda n: progress.update(task, total=n),
                          on_step=lambda loss: progress.update(task, advance=1, loss=f"{loss:.3f}"))
    weights = None
    if test:
        weights, scores = _fit(data.records, test, str(out), as_json)
        record_weights(out, weights, scores, len(test))
    after = _measure(data.records, test, str(out), "tuned model", as_json)
    result = {**report.to_dict(), "held_out": len(test), "recall@5_before": before, "recall@5_after": after,
              "weights": list(weights) if weights else None}
    if as_json:
        typer.echo(json.dumps(result))
        return
    out_console.print(f"tuned {model} on {report.examples} examples in {report.seconds:.0f}s → {out}",
                      highlight=False)
    if test:
        for method in before:
            out_console.print(f"  {method} Recall@5 on {len(test)} held-out queries: {before[method]:.3f} → "
                              f"{after[method]:.3f}", highlight=False)
        out_console.print(f"  hybrid fusion weights (bm25, dense) chosen on the same held-out queries: {weights}; "
                          "stored in the folder, used whenever it is the model", highlight=False)
    else:
        from router.ranking.config import RouterConfig

        out_console.print("  no held-out queries: nothing measured, and the hybrid keeps the default fusion "
                          f"weights {RouterConfig().weights}", highlight=False)
    from apidb.urls import redact_url

    out_console.print(f"use it: toolsift index --db {redact_url(str(catalog_path(db)))} --model {out}",
                      highlight=False)


def _busy(message: str, quiet: bool):
    """A spinner on stderr for a step without a known length (nothing with --json)."""
    import contextlib

    return contextlib.nullcontext() if quiet else err.status(message)


def _measure(records, test, model: str, which: str, quiet: bool):
    """Recall@5 on the held-out queries (embeds the catalog with that model: can take a minute)."""
    from router.training.tune import recall_at

    if not test:
        return None
    with _busy(f"Recall@5 of the {which} on {len(test)} held-out queries", quiet):
        return recall_at(records, test, model)


def _fit(records, test, model: str, quiet: bool):
    from router.training.tune import fit_weights

    with _busy(f"choosing the hybrid fusion weights on {len(test)} held-out queries", quiet):
        return fit_weights(records, test, model)


def register(app: typer.Typer) -> None:
    app.command("tune")(tune)
