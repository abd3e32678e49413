"""`toolsift bench ...`: one command per benchmark, each writing results.json + report.md.

Every benchmark module is imported inside its command (they pull ranx, matplotlib,
torch), so `toolsift --help` stays fast.
"""
from __future__ import annotations

import importlib
import shlex
import sys
from pathlib import Path
from typing import Optional

import typer

from apidb.errors import ToolsiftError

RESULTS = Path(__file__).resolve().parent / "results"
# command -> (module, what it does); each module exposes run(out_dir, quick)
DELEGATED = {
    "gorilla": ("benchmarks.gorilla_audit", "Gorilla hallucination audit over the 24 released response files"),
    "bfcl": ("benchmarks.bfcl_check", "JSON checker over the BFCL AST categories, plus throughput"),
    "router": ("benchmarks.router_targets", "router quality and speed targets (issue 3)"),
    "tuning": ("benchmarks.tuning", "APIBench Recall@5 with the encoder tuned on labelled questions"),
    "proxy": ("benchmarks.proxy_overhead", "middleware/proxy overhead per request"),
}

bench_app = typer.Typer(name="bench", no_args_is_help=True,
                        help="Benchmarks on the real public data: retrieval, scale, Gorilla audit, BFCL, router, proxy.")


class BenchError(ToolsiftError):
    """A benchmark could not run (module missing, bad option)."""


def _command() -> str:
    return "toolsift " + " ".join(map(shlex.quote, sys.argv[1:]))


def _out(out: Optional[Path], name: str, quick: bool) -> Path:
    if out is not None:
        return out
    return RESULTS / "quick" / name if quick else RESULTS / name


def _csv(value: Optional[str]) -> Optional[list[str]]:
    return [x.strip() for x in value.split(",") if x.strip()] if value else None


@bench_app.command("retrieval")
def retrieval_cmd(
    datasets: Optional[str] = typer.Option(None, "--datasets", help="comma-separated dataset names (default: all)"),
    methods: Optional[str] = typer.Option(None, "--methods", help="comma-separated method names (default: all)"),
    out: Optional[Path] = typer.Option(None, "--out", help="output folder (default: benchmarks/results/retrieval)"),
    quick: bool = typer.Option(False, "--quick", help="CI sample: 30 queries and at most 100 tools per dataset"),
    max_queries: Optional[int] = typer.Option(None, "--max-queries", help="sample size per dataset"),
    db: Optional[Path] = typer.Option(None, "--db", help="your catalog, to benchmark with --queries"),
    queries: Optional[Path] = typer.Option(None, "--queries", help="your labelled queries (JSONL: id, query or "
                                           "messages, relevant: record ids or unique tool names)"),
) -> None:
    """Compare rank-bm25 and the router's BM25 / dense / hybrid variants on every dataset, or on
    your own catalog and labelled queries (--db with --queries)."""
    from . import retrieval
    from .datasets import DatasetError

    if (db is None) != (queries is None):
        raise DatasetError("--db and --queries go together: your catalog and your labelled queries")
    custom = []
    if db is not None:
        from .custom import load_custom

        custom = [load_custom(db, queries)]
    # your own runs never overwrite the committed public report
    target = out or (Path("bench-out") / "retrieval" if custom else _out(out, "retrieval", quick))
    res = retrieval.run(_csv(datasets), _csv(methods), target, quick, max_queries, command=_command(),
                        custom=custom)
    typer.echo(f"wrote {target / 'report.md'} ({len(res['datasets'])} datasets, {res['wall_seconds']:.0f} s)")


@bench_app.command("scale")
def scale_cmd(
    sizes: Optional[str] = typer.Option(None, "--sizes", help="comma-separated catalog sizes (default: 2k..100k)"),
    methods: Optional[str] = typer.Option(None, "--methods", help="comma-separated: rank_bm25,bm25,dense,hybrid"),
    out: Optional[Path] = typer.Option(None, "--out", help="output folder (default: benchmarks/results/scale)"),
    quick: bool = typer.Option(False, "--quick", help="small sizes only (CI)"),
    encoders: Optional[str] = typer.Option(None, "--encoders",
                                           help="comma-separated: torch,onnx,onnx-int8,onnx-fp32 (default torch,onnx)"),
) -> None:
    """Route latency and memory vs catalog size on synthetic replicas of the real catalogs."""
    from . import scale

    target = _out(out, "scale", quick)
    size_list = [int(s) for s in _csv(sizes)] if sizes else None
    res = scale.run(target, quick, sizes=size_list, methods=_csv(methods), command=_command(),
                    encoders=_csv(encoders))
    typer.echo(f"wrote {target / 'report.md'} ({res['wall_seconds']:.0f} s)")


def run_delegated(name: str, out: Optional[Path], quick: bool) -> None:
    module, _ = DELEGATED[name]
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            raise BenchError(f"benchmark {name!r} is not available: module {module} is missing") from None
        raise
    if not hasattr(mod, "run"):
        raise BenchError(f"benchmark {name!r}: {module} has no run(out_dir, quick) function")
    target = _out(out, name, quick)
    mod.run(target, quick)
    typer.echo(f"wrote {target}")


def _delegated_command(name: str, doc: str):
    def command(
        out: Optional[Path] = typer.Option(None, "--out", help=f"output folder (default: benchmarks/results/{name})"),
        quick: bool = typer.Option(False, "--quick", help="a small sample (CI)"),
    ) -> None:
        run_delegated(name, out, quick)

    command.__doc__ = doc
    return command


for _name, (_module, _doc) in DELEGATED.items():
    bench_app.command(_name)(_delegated_command(_name, _doc))


@bench_app.command("all")
def all_cmd(
    out: Optional[Path] = typer.Option(None, "--out", help="parent folder (default: benchmarks/results)"),
    quick: bool = typer.Option(False, "--quick", help="every benchmark on a sample (CI)"),
) -> None:
    """Every benchmark in turn; a missing or failing one is reported and the rest still run."""
    from . import retrieval, scale

    base = out if out is not None else (RESULTS / "quick" if quick else RESULTS)
    failed: list[str] = []
    steps = [("retrieval", lambda: retrieval.run(None, None, base / "retrieval", quick, command=_command())),
             ("scale", lambda: scale.run(base / "scale", quick, command=_command()))]
    steps += [(n, (lambda n=n: run_delegated(n, base / n, quick))) for n in DELEGATED]
    for name, step in steps:
        typer.echo(f"== bench {name}", err=True)
        try:
            step()
        except ToolsiftError as exc:
            typer.echo(f"error: {name}: {exc}", err=True)
            failed.append(name)
    if failed:
        raise BenchError(f"{len(failed)} benchmark(s) failed: {', '.join(failed)}")
    typer.echo(f"all benchmarks written under {base}")


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench")
