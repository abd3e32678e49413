"""`toolsift bench ...`: one command per benchmark, each writing results.json + report.md.

This is the benchmarks' only command line: it joins the `toolsift` tree as a plug-in (the
``toolsift.commands`` entry point in pyproject.toml), so the product never imports this package.
Every benchmark module is imported inside its command (they pull ranx, matplotlib, torch), so
`toolsift --help` stays fast.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Optional

import typer

from apidb.errors import ToolsiftError
from router.cli.options import Db, catalog_path

from .errors import BenchmarkError
from .serving_commands import _proxy_cmd, cold_route_cmd, replicas_cmd
from .suite import DELEGATED, FOLDERS, RESULTS, SUMMARIES, _command, _csv, _out, run_delegated

bench_app = typer.Typer(name="bench", no_args_is_help=True,
                        help="Benchmarks on the real public data: retrieval, scale, Gorilla audit, BFCL, router, proxy.")


@bench_app.command("retrieval")
def retrieval_cmd(
    datasets: Optional[str] = typer.Option(None, "--datasets", help="comma-separated dataset names (default: all)"),
    methods: Optional[str] = typer.Option(None, "--methods", help="comma-separated method names (default: all)"),
    out: Optional[Path] = typer.Option(None, "--out", help="output folder (default: benchmarks/results/retrieval; "
                                       "--quick: benchmarks/results/quick/retrieval; --queries: bench-out/retrieval)"),
    quick: bool = typer.Option(False, "--quick", help="CI sample: 30 queries and at most 100 tools per dataset"),
    max_queries: Optional[int] = typer.Option(None, "--max-queries", help="sample size per dataset"),
    db: Db = None,
    queries: Optional[Path] = typer.Option(None, "--queries", help="your labelled queries (JSONL: id, query or "
                                           "messages, relevant: record ids or unique tool names)"),
    tools: Optional[str] = typer.Option(None, "--tools", help="your tools as Python functions or framework tool "
                                        "objects instead of a catalog: MODULE:ATTRIBUTE naming a list or mapping "
                                        "of them, or a router.frameworks.ToolRegistry (with --queries)"),
    model: Optional[str] = typer.Option(None, "--model", show_default=False,
                                        help="the router's embedding model (default on the public datasets: the "
                                             "untuned all-MiniLM-L6-v2, since the shipped general encoder trained on "
                                             "them; on your own --queries: toolsift-general-minilm, as `route`)"),
) -> None:
    """Compare rank-bm25 and the router's BM25 / dense / hybrid variants on every dataset, or on
    your own catalog and labelled queries (--db with --queries), or on your own Python tools
    (--tools with --queries)."""
    from .retrieval import comparison as retrieval
    from .errors import DatasetError

    custom = []
    if tools is not None and db is not None:
        raise DatasetError("--tools and --db are two sources of tools: give one")
    if queries is not None and tools is not None:  # your Python functions with your labelled queries
        from .data.custom import load_python_tools

        custom = [load_python_tools(tools, queries)]
    elif queries is not None:  # your catalog (--db, else $TOOLSIFT_DB) with your labelled queries
        from .data.custom import load_custom

        custom = [load_custom(catalog_path(db), queries)]
    elif db is not None or tools is not None:
        raise DatasetError(f"{'--db' if db is not None else '--tools'} and --queries go together: give the "
                           "labelled queries for those tools")
    # your own runs never overwrite the committed public report
    target = out or (Path("bench-out") / "retrieval" if custom else _out(out, "retrieval", quick))
    res = retrieval.run(_csv(datasets), _csv(methods), target, quick, max_queries, command=_command(),
                        custom=custom, model=model)
    typer.echo(f"wrote {target / 'report.md'} ({len(res['datasets'])} datasets, {res['wall_seconds']:.0f} s)")


@bench_app.command("scale")
def scale_cmd(
    sizes: Optional[str] = typer.Option(None, "--sizes", help="comma-separated catalog sizes (default: 2k..100k)"),
    methods: Optional[str] = typer.Option(None, "--methods", help="comma-separated: rank_bm25,bm25,dense,hybrid"),
    out: Optional[Path] = typer.Option(None, "--out", help="output folder (default: benchmarks/results/scale; --quick: benchmarks/results/quick/scale)"),
    quick: bool = typer.Option(False, "--quick", help="small sizes only (CI)"),
    encoders: Optional[str] = typer.Option(None, "--encoders",
                                           help="comma-separated: torch,onnx,onnx-int8,onnx-fp32 (default torch,onnx)"),
) -> None:
    """Route latency and memory vs catalog size on synthetic replicas of the real catalogs."""
    from .retrieval import scale

    target = _out(out, "scale", quick)
    size_list = [int(s) for s in _csv(sizes)] if sizes else None
    res = scale.run(target, quick, sizes=size_list, methods=_csv(methods), command=_command(),
                    encoders=_csv(encoders))
    typer.echo(f"wrote {target / 'report.md'} ({res['wall_seconds']:.0f} s)")


bench_app.command("replicas")(replicas_cmd)
bench_app.command("cold-route")(cold_route_cmd)


@bench_app.callback()
def _needs_bench_extra() -> None:
    """Every benchmark scores with ranx (which pulls scipy, numba, pandas): the `bench` extra, not
    the run-time install. Say so in one line before any work (help still shows without it)."""
    from importlib.util import find_spec

    missing = [m for m in ("ranx", "rank_bm25") if find_spec(m) is None]
    if missing and not {"--help", "-h"} & set(sys.argv):
        raise BenchmarkError(f"`toolsift bench` needs the benchmark extra ({', '.join(missing)} not installed): "
                             "pip install 'toolsift[bench]'")


@bench_app.command("encoders")
def encoders_cmd(
    datasets: Optional[str] = typer.Option(None, "--datasets", help="comma-separated dataset names (default: all)"),
    max_passages: int = typer.Option(1000, "--max-passages", help="passages per catalog (a fixed sample)"),
    out: Optional[Path] = typer.Option(None, "--out", help="output folder (default: benchmarks/results/encoders, with or without --quick)"),
    torch_cache: bool = typer.Option(False, "--torch-cache", help="reuse torch vectors from the fp32 embedding cache"),
    retrieval: bool = typer.Option(True, "--retrieval/--no-retrieval",
                                   help="also every catalog's dense and hybrid metrics, torch vs ONNX int8"),
) -> None:
    """ONNX Runtime encoders (fp32, int8) against the torch reference: cosine per catalog, docs/s, query latency,
    retrieval metrics side by side."""
    from .retrieval import encoders

    target = out or RESULTS / "encoders"
    res = encoders.run(target, _csv(datasets), max_passages, torch_cache=torch_cache, retrieval=retrieval)
    typer.echo(f"wrote {target / 'report.md'} in {res['wall_seconds']:.0f} s")


def _router_cmd(
    out: Optional[Path] = typer.Option(None, "--out", help="output folder (default: benchmarks/results/router_targets; --quick: benchmarks/results/quick/router_targets)"),
    quick: bool = typer.Option(False, "--quick", help="a small sample and a smaller grid (CI)"),
    no_grid: bool = typer.Option(False, "--no-grid", help="skip the tuning grid (score the shipped defaults only)"),
    warm: bool = typer.Option(False, "--warm", help="only embed the corpora and queries into the cache"),
    render: bool = typer.Option(False, "--render", help="only rewrite report.md from OUT/results.json"),
    speed_only: bool = typer.Option(False, "--speed-only",
                                    help="only the speed stage (torch vs the default encoder), into OUT/results.json"),
    quality_only: bool = typer.Option(False, "--quality-only",
                                      help="only the quality stage (with the general encoder's cross-fitted rows), "
                                           "into OUT/results.json"),
) -> None:
    """Router quality and speed targets: the defaults' grid, StableToolBench nDCG@5, APIBench Recall@5."""
    from .retrieval import targets_run as rt
    from .retrieval.targets import warm as warm_sets

    if speed_only:
        rt.run_speed_only(_out(out, "router_targets", quick), quick=quick)
    elif quality_only:
        rt.run_quality_only(_out(out, "router_targets", quick), quick=quick)
    elif render:
        import json

        target = out or rt.DEFAULT_OUT
        rt.write_report(json.loads((target / "results.json").read_text(encoding="utf-8")), target)
    elif warm:
        warm_sets(quick)
    else:
        rt.run(_out(out, "router_targets", quick), quick=quick, do_grid=not no_grid)
    typer.echo(f"wrote {_out(out, 'router_targets', quick) / 'report.md'}")


def _bfcl_cmd(
    out: Optional[Path] = typer.Option(None, "--out", help="output folder (default: benchmarks/results/bfcl; --quick: benchmarks/results/quick/bfcl)"),
    quick: bool = typer.Option(False, "--quick", help="a small sample, one speed pass per variant (CI)"),
    passes: Optional[int] = typer.Option(None, "--passes", min=1, help="fresh processes timed per variant "
                                         "(default 11; 1 with --quick)"),
    reference_python: Optional[Path] = typer.Option(
        None, "--reference-python", help="an interpreter with bfcl-eval installed: the official checker is timed "
        "in the same run, beside toolsift (benchmarks/README.md says how to install it)"),
) -> None:
    """JSON checker vs the official BFCL verdicts (strict, --mode bfcl), speed beside the official checker's."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from .checker import bfcl_check
    from .checker.bfcl_speed import OURS, REFERENCE, SPEED_PASSES, summary

    target = _out(out, "bfcl", quick)
    total = (passes or (1 if quick else SPEED_PASSES)) * (len(OURS) + (len(REFERENCE) if reference_python else 0))
    console = Console(stderr=True)
    with Progress(TextColumn("timing checkers (fresh processes)"), BarColumn(), MofNCompleteColumn(),
                  console=console, transient=True, disable=not console.is_terminal) as bar:
        task = bar.add_task("speed", total=total)
        res = bfcl_check.run(target, quick, reference_python, passes, lambda: bar.advance(task))
    typer.echo(summary(res["official"]["speed"]))
    typer.echo(f"wrote {target / 'report.md'}: {SUMMARIES['bfcl'](res)}")


@bench_app.command("routing")
def routing_cmd(
    out: Optional[Path] = typer.Option(None, "--out", help="output folder (default: benchmarks/results/routing; --quick: benchmarks/results/quick/routing)"),
    quick: bool = typer.Option(False, "--quick", help="a small sample, no tuning (CI)"),
    model: Optional[str] = typer.Option(None, "--model", help="encoder: the bundled id or a local (tuned) folder"),
    no_tune: bool = typer.Option(False, "--no-tune", help="skip the usage-log tuning (minutes of training)"),
    only: Optional[str] = typer.Option(None, "--only", help="speed | usage-log | curve | parts | companions | outside: run only that "
                                       "section, into OUT/results.json of an earlier run (parts, companions, outside: "
                                       "of one if there is one)"),
    render: bool = typer.Option(False, "--render", help="only rewrite OUT/report.md from OUT/results.json"),
    leave_out: Optional[str] = typer.Option(None, "--leave-out", metavar="FAMILY", show_default=False,
                                            help="with --only companions: score FAMILY with the general encoder "
                                                 "trained without it (trains it unless cached: 44-76 minutes here); "
                                                 "all: the cross-fitted tables, then every family in turn"),
) -> None:
    """Complete multi-tool sets, adaptive k, abstention, exact names and learning from use, beside
    today's router and rank-bm25 (settings cross-fitted)."""
    from .routing import features as routing
    from .routing.report import summary

    target = _out(out, "routing", quick)
    if only not in (None, "speed", "usage-log", "curve", "parts", "companions", "outside"):
        raise BenchmarkError(f"--only: speed, usage-log, curve, parts, companions or outside, not {only!r}")
    if leave_out is not None and (only != "companions" or model is not None or render):
        raise BenchmarkError("--leave-out scores the general encoder's companions rows: it goes with "
                             "--only companions and no --model or --render")
    if leave_out is not None:
        from .routing.general_lofo import check

        check(leave_out)
    earlier = "--render" if render else f"--only {only}" if only in ("speed", "usage-log", "curve") else None
    if earlier and not (target / "results.json").is_file():  # these read an earlier run's results
        raise BenchmarkError(f"{earlier}: no earlier run's results in {target} (results.json): run `toolsift bench "
                             f"routing{' --quick' if quick else ''}` first, or give --out the folder of one")
    if render:
        import json

        from .routing.features import rechosen
        from .routing.report import write_report

        path = target / "results.json"
        res = json.loads(path.read_text(encoding="utf-8"))
        if "curve" in res and (again := rechosen(res["curve"])) != res["curve"]:  # an earlier rule's: same curve
            res["curve"] = again
            path.write_text(json.dumps(res, indent=1, default=str), encoding="utf-8")
        write_report(res, path.parent)
        typer.echo(f"wrote {path.parent / 'report.md'}")
        return
    res = routing.run(target, quick=quick, model=model, tune_log=not no_tune, only=only, leave_out=leave_out)
    if only == "outside":
        from .routing.outside import summary as outside_summary

        typer.echo(outside_summary(res))
    elif only != "companions":  # (its cross-fitted tables and each family left out print their lines as they finish)
        typer.echo(summary(res))
    typer.echo(f"wrote {target / 'report.md'}")


def _simple(name: str) -> Callable[..., None]:
    def command(
        out: Optional[Path] = typer.Option(None, "--out", help=f"output folder (default: benchmarks/results/{FOLDERS.get(name, name)}; "
                                 f"--quick: benchmarks/results/quick/{FOLDERS.get(name, name)})"),
        quick: bool = typer.Option(False, "--quick", help="a small sample (CI)"),
    ) -> None:
        run_delegated(name, out, quick)

    command.__doc__ = DELEGATED[name][1]
    return command


for _name in SUMMARIES:
    if _name != "bfcl":  # it has options of its own
        bench_app.command(_name)(_simple(_name))
bench_app.command("bfcl")(_bfcl_cmd)


@bench_app.command("general-encoder")
def _general_encoder_cmd(
    out: Optional[Path] = typer.Option(None, "--out", help="output folder (default: benchmarks/results/general_encoder; --quick: benchmarks/results/quick/general_encoder)"),
    quick: bool = typer.Option(False, "--quick", help="8 training pairs per dataset, 40 scored queries (CI)"),
    leave_out: Optional[str] = typer.Option(None, "--leave-out", metavar="FAMILY", show_default=False,
                                            help="train without this family and score it (default: cross-fitting "
                                                 "over every family)"),
    per_dataset: Optional[int] = typer.Option(None, "--per-dataset", "--per-family", min=1, show_default=False,
                                              help="training pairs drawn per dataset (default 1200, the shipped recipe)"),
    build: bool = typer.Option(False, "--build", help="train on every family and write the shipped delta "
                                                      "(router/data/general_encoder.npz) instead of scoring"),
) -> None:
    """The general tool encoder: scored cross-fitted or leave-one-family-out, or built (tens of minutes)."""
    from router.encoders.model import require_train

    require_train("`toolsift bench general-encoder`")
    from .retrieval import general_encoder

    if build:
        # the shipped delta is trained on every family, with the full recipe, into the package:
        # a --leave-out, --quick or --out here would be silently ignored, so it is refused instead
        given = [flag for flag, v in (("--leave-out", leave_out), ("--quick", quick), ("--out", out)) if v]
        if given:
            raise BenchmarkError(f"--build trains the shipped encoder on every family and takes no {', '.join(given)}")
        from .retrieval.general_training import build_shipped

        info = build_shipped(per_dataset)
        typer.echo(f"wrote {info['path']} ({info['bytes'] / 1e6:.1f} MB, rank {info['rank']}, "
                   f"{info['pairs']:,} pairs): model id toolsift-general-minilm@{info['sha']}")
        return
    target = _out(out, "general_encoder" if leave_out is None else f"general_encoder_without_{leave_out}", quick)
    res = general_encoder.run(target, quick, leave_out, per_dataset)
    rows = res["rows"]
    typer.echo(f"wrote {target / 'report.md'}: {res['mode']} hybrid nDCG@5 "
               f"{general_encoder.mean_score(rows, 'hybrid', 'base', 'ndcg@5'):.3f} -> "
               f"{general_encoder.mean_score(rows, 'hybrid', 'tuned', 'ndcg@5'):.3f} (mean of {len(res['scored'])} datasets)")
bench_app.command("router")(_router_cmd)
bench_app.command("proxy")(_proxy_cmd)


@bench_app.command("all")
def all_cmd(
    out: Optional[Path] = typer.Option(None, "--out", help="parent folder (default: benchmarks/results)"),
    quick: bool = typer.Option(False, "--quick", help="every benchmark on a sample (CI)"),
) -> None:
    """Every benchmark in turn; a missing or failing one is reported and the rest still run."""
    from .retrieval import comparison as retrieval
    from .retrieval import scale

    base = out if out is not None else (RESULTS / "quick" if quick else RESULTS)
    failed: list[str] = []
    steps = [("retrieval", lambda: retrieval.run(None, None, base / "retrieval", quick, command=_command())),
             ("scale", lambda: scale.run(base / "scale", quick, command=_command()))]
    steps += [(n, (lambda n=n: run_delegated(n, base / FOLDERS.get(n, n), quick))) for n in DELEGATED]
    for name, step in steps:
        typer.echo(f"== bench {name}", err=True)
        try:
            step()
        except ToolsiftError as exc:
            typer.echo(f"error: {name}: {exc}", err=True)
            failed.append(name)
    if failed:
        raise BenchmarkError(f"{len(failed)} benchmark(s) failed: {', '.join(failed)}")
    typer.echo(f"all benchmarks written under {base}")


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench")
