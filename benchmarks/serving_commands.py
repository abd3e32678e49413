"""`toolsift bench replicas | cold-route | proxy`: the commands of the serving benchmarks
(benchmarks/serving/), registered on the `bench` app by benchmarks/cli.py in their place in its
help. Each benchmark module is imported inside its command, as in cli.py.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from .errors import BenchmarkError
from .suite import _command, _csv, _out


def replicas_cmd(
    size: int = typer.Option(20_000, "--size", min=100, help="catalog size (replicas of the scale benchmark's tools)"),
    replicas: int = typer.Option(3, "--replicas", min=1, help="proxies started from the catalog"),
    changes: int = typer.Option(20, "--changes", min=1, help="catalog changes timed until every replica routes them"),
    out: Optional[Path] = typer.Option(None, "--out", help="output folder (default: benchmarks/results/replicas; --quick: benchmarks/results/quick/replicas)"),
    quick: bool = typer.Option(False, "--quick", help="2,000 tools, 5 changes"),
) -> None:
    """Proxy replicas over one PostgreSQL catalog beside a SQLite one: cold start, passages embedded,
    commit-to-routing time of a change, route p50 (with the load average)."""
    from .serving import replicas as bench

    target = _out(out, "replicas", quick)
    res = bench.run(target, size=size, replicas=replicas, changes=changes, quick=quick, command=_command())
    typer.echo(bench.summary(res))
    typer.echo(f"wrote {target / 'report.md'}")


def cold_route_cmd(
    size: int = typer.Option(20_000, "--size", min=100, help="catalog size (replicas of the scale benchmark's tools)"),
    runs: int = typer.Option(10, "--runs", min=1, help="fresh processes timed per method (one real query each)"),
    methods: str = typer.Option("hybrid,bm25", "--methods", help="comma-separated: hybrid, bm25, dense"),
    out: Optional[Path] = typer.Option(None, "--out", help="output folder (default: benchmarks/results/cold_route; --quick: benchmarks/results/quick/cold_route)"),
    work: Optional[Path] = typer.Option(None, "--work", help="where the catalog and its index are kept "
                                        "(default: $TOOLSIFT_CACHE/bench)"),
    quick: bool = typer.Option(False, "--quick", help="2,000 tools, 3 runs (CI)"),
    build: bool = typer.Option(False, "--build", help="also time a fresh `toolsift index` of the catalog with "
                               "nothing cached (docs/s end to end)"),
) -> None:
    """Wall and CPU time of fresh `toolsift route` processes on an indexed catalog (hybrid beside bm25),
    with the load average and the costliest imports."""
    from .serving import cold_route

    chosen = tuple(_csv(methods) or ())
    bad = [m for m in chosen if m not in ("hybrid", "bm25", "dense")]
    if bad or not chosen:
        raise BenchmarkError(f"--methods: choose from hybrid, bm25, dense (not {', '.join(bad) or 'nothing'})")
    target = _out(out, "cold_route", quick)
    res = cold_route.run(target, quick=quick, size=None if quick and size == 20_000 else size, runs=runs if
                         not quick or runs != 10 else None, methods=chosen, work=work, command=_command(),
                         build=build)
    typer.echo(cold_route.summary(res))
    for row in cold_route.readme_rows(res):
        typer.echo(f"README row: {row}")
    typer.echo(f"wrote {target / 'report.md'}")


def _proxy_cmd(
    out: Optional[Path] = typer.Option(None, "--out", help="output folder (default: benchmarks/results/proxy; --quick: benchmarks/results/quick/proxy)"),
    quick: bool = typer.Option(False, "--quick", help="100 concurrent requests and 60 token queries (CI)"),
    method: str = typer.Option("bm25", "--method", help="bm25 | hybrid | dense"),
    k: int = typer.Option(5, "-k", help="tools kept per request"),
    soak: bool = typer.Option(False, "--soak", help="instead: 2,000 requests with distinct tool lists, RSS and "
                              "latency along the way (default method hybrid; results in benchmarks/results/proxy_soak)"),
    soak_requests: Optional[int] = typer.Option(None, "--soak-requests", help="requests in the soak (default 2,000; "
                                                "200 with --quick)"),
    new_list: bool = typer.Option(False, "--new-list", help="instead: one new list of real tools, time to its first "
                                  "answer and until it is ranked hybrid (results in benchmarks/results/proxy_new_list)"),
    new_list_tools: int = typer.Option(10_000, "--new-list-tools", help="tools in the --new-list list"),
) -> None:
    """Middleware/proxy overhead per request (own time, CPU, tokens saved), a soak (--soak), or a new big
    tool list (--new-list)."""
    from .serving import proxy_overhead

    if method not in ("bm25", "hybrid", "dense"):
        raise BenchmarkError(f"--method must be bm25, hybrid or dense, not {method!r}")
    if new_list:
        from .serving import new_list as new_list_bench

        target = _out(out, "proxy_new_list", quick)
        res = new_list_bench.run(target, n_tools=new_list_tools, k=k)
        typer.echo(new_list_bench.report(res))
        typer.echo(f"wrote {target / 'report.md'}")
        return
    if soak:
        from .serving import proxy_soak

        target = _out(out, "proxy_soak", quick)
        method = method if "--method" in sys.argv else "hybrid"  # the soak's point is the embedding cache
        res = proxy_soak.run(target, quick=quick, method=method, k=k, requests=soak_requests)
        typer.echo(proxy_soak.report(res))
        typer.echo(f"wrote {target / 'report.md'}")
        return
    target = _out(out, "proxy", quick)
    res = proxy_overhead.run(target, quick=quick, method=method, k=k)
    typer.echo(proxy_overhead._report(res))
    typer.echo(f"wrote {target / 'report.md'}")

