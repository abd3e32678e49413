"""`toolsift demo`: the main job on the bundled default catalog, end to end.

Builds the catalog from the vendored Gorilla API databases, indexes it, routes a
few example questions and checks a few example model outputs. Needs nothing
outside the installed package.
"""
from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

import apidb

from .options import DemoDb

out = Console()

BUNDLED = Path(apidb.__file__).resolve().parent / "data" / "gorilla"

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


def route_examples(db: Path, k: int) -> None:
    from router.ranking.engine import Router

    from . import route as router_cli

    out.rule("[bold]2. Index[/bold] (bm25s + MiniLM/faiss; vectors cached by content hash)")
    router_cli.run_index(db, None, None, quiet=False)
    router = Router.open(db)
    out.rule(f"[bold]3. Route[/bold] (hybrid, top {k} of {len(router)} tools)")
    for question in QUESTIONS:
        router_cli._print_table(question, router.select(question, k=k))


def check_examples(db: Path) -> None:
    from apidb import Catalog
    from checker import check_code

    out.rule("[bold]4. Check[/bold] (strict AST match against the catalog; gold: bart-large-cnn summarizer)")
    with Catalog.open(db) as cat:
        records = cat.records()
    for expected, output, gold in OUTPUTS:
        v = check_code(output, records, gold=gold)
        out.print(f"[bold]{v.verdict:<13}[/bold] {output}", highlight=False)
        if v.api or v.nearest:
            out.print(f"{'':14}{'record' if v.api else 'nearest'}: {v.api or v.nearest}", highlight=False)
        for defect in v.defects[:1]:
            out.print(f"{'':14}{defect.message}", highlight=False)


def demo(db: DemoDb = Path(".toolsift/demo.db"),
         k: int = typer.Option(3, "-k", help="Tools to show per question.")) -> None:
    """Build the bundled catalog, route example questions, check example outputs."""
    db.parent.mkdir(parents=True, exist_ok=True)
    build_catalog(db)
    route_examples(db, k)
    check_examples(db)
    next_steps(db)


def examples_dir() -> Path | None:
    """The repository's examples/ (tools.json, calls.jsonl): under the current folder, else next to the
    package in a source checkout (an editable install run from elsewhere); None in a plain wheel install."""
    checkout = Path(apidb.__file__).resolve().parents[1] / "examples"
    for folder in (Path("examples"), checkout):
        if (folder / "tools.json").is_file() and (folder / "calls.jsonl").is_file():
            return folder
    return None


def _shown(path: Path) -> str:
    """``path`` as a command line shows it: relative to the current folder when under it, quoted if needed."""
    import shlex

    try:
        path = path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        path = path.resolve()
    return shlex.quote(str(path))


def next_steps(db: Path) -> None:
    """Where to go from here: the same commands on the demo catalog, then on your own tools. Every line
    that is not a comment runs as printed from the folder the demo ran in (tests/router/cli/test_demo.py
    runs each); your own catalog goes next to the demo's, not into the current folder."""
    mine, demo_db = _shown(db.parent / "my.db"), _shown(db)
    steps = [(f'toolsift route "translate English text to German" --db {demo_db}', "your own question"),
             (f"toolsift catalog list resnet --db {demo_db}", "what the catalog holds")]
    examples = examples_dir()
    if examples is not None:
        ex = _shown(examples)
        steps += [(f"toolsift catalog add {ex}/tools.json --db {mine} && toolsift index --db {mine}", "your tools"),
                  (f"toolsift check {ex}/calls.jsonl --db {mine} --fail-on none",
                   "check tool calls (3 of the 4 are wrong)"),
                  (f"toolsift serve openai --db {mine} --upstream https://api.openai.com/v1", "route live requests")]
    else:
        steps.append(("# your tools: toolsift catalog add TOOLS.json --db my.db (examples/ comes with the repository)",
                      ""))
    steps.append(("toolsift --help", "then toolsift COMMAND --help, docs/cli.md"))
    out.rule("[bold]Next[/bold]")
    for cmd, why in steps:  # the why above its command: a command line is never wrapped (soft_wrap), nor padded
        if why:
            out.print(f"  # {why}", highlight=False, markup=False, soft_wrap=True)
        out.print(f"  {cmd}", highlight=False, markup=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
