"""`toolsift demo`: the main job on the bundled default catalog, end to end.

Builds the catalog from the vendored Gorilla API databases, indexes it, routes a
few example questions and checks a few example model outputs. Needs nothing
outside the installed package.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

out = Console()

BUNDLED = Path(__file__).resolve().parents[1] / "apidb" / "data" / "gorilla"

QUESTIONS = [
    "I want to classify the sport being played in a short video clip.",
    "Give me a model that summarizes long English news articles.",
    "Extract feature vectors from images so I can cluster similar street-art photos.",
]

# One example model output per verdict, in the released Gorilla answer formats.
OUTPUTS = [
    ("correct", "<<<api_call>>>: pipeline('summarization', model='facebook/bart-large-cnn')",
     "pipeline('summarization', model='facebook/bart-large-cnn')"),
    ("wrong_api", "<<<api_call>>>: pipeline('summarization', model='google/pegasus-xsum')",
     "pipeline('summarization', model='facebook/bart-large-cnn')"),
    ("hallucinated", "<<<api_call>>>: pipeline('summarization', model='facebook/bart-large-cnn-v9')",
     "pipeline('summarization', model='facebook/bart-large-cnn')"),
    ("unparsable", "I am not sure which model to use here, sorry.",
     "pipeline('summarization', model='facebook/bart-large-cnn')"),
]


def bundled_sources() -> list[Path]:
    return sorted(BUNDLED.glob("*_api.jsonl"))


def build_catalog(db: Path) -> None:
    from apidb import Catalog
    from apidb.loaders import load

    records = []
    for src in bundled_sources():
        records += load(src).records
    with Catalog(db) as cat:
        report = cat.sync(records)
        stats = cat.stats()
        samples = [cat.records(ns)[0] for ns in list(cat.namespaces())[:2]]
    out.rule("[bold]1. Catalog[/bold] (bundled Gorilla APIBench API databases)")
    out.print(f"{db}: added {report.added}, updated {report.updated}, removed {report.removed}, "
              f"unchanged {report.unchanged}", highlight=False)
    table = Table("namespace", "records", title=f"{stats['records']} records")
    for ns, n in stats["namespaces"].items():
        table.add_row(ns, str(n))
    out.print(table)
    for rec in samples:
        out.print(f"[bold]{rec.id}[/bold]  {rec.call}\n  {rec.description[:160]}", highlight=False)


def demo(db: Optional[Path] = typer.Option(Path(".toolsift/demo.db"), "--db", help="Where to build the demo catalog."),
         k: int = typer.Option(3, "-k", help="Tools to show per question.")) -> None:
    """Build the bundled catalog, route example questions, check example outputs."""
    db.parent.mkdir(parents=True, exist_ok=True)
    build_catalog(db)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
