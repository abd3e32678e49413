"""The benchmarks `toolsift bench` runs with their default options, and where each writes.

``DELEGATED`` names each such benchmark's module (every one has ``run(out_dir, quick) -> dict``),
``SUMMARIES`` the line printed when it ends; `run_delegated` runs one, for its own command and for
`bench all`. The modules are imported by name when run, so `toolsift --help` stays fast.
"""
from __future__ import annotations

import importlib
import shlex
import sys
from pathlib import Path
from typing import Callable, Optional

import typer

from .errors import BenchmarkError

RESULTS = Path(__file__).resolve().parent / "results"


def _command() -> str:
    return "toolsift " + " ".join(map(shlex.quote, sys.argv[1:]))


def _out(out: Optional[Path], name: str, quick: bool) -> Path:
    if out is not None:
        return out
    return RESULTS / "quick" / name if quick else RESULTS / name


def _csv(value: Optional[str]) -> Optional[list[str]]:
    return [x.strip() for x in value.split(",") if x.strip()] if value else None


# name -> (module, what it does); each module has run(out_dir, quick) -> dict, which `bench all` calls.
DELEGATED = {
    "gorilla": ("benchmarks.checker.gorilla_audit", "Gorilla hallucination audit over the 24 released response files"),
    "bfcl": ("benchmarks.checker.bfcl_check", "JSON checker vs the official BFCL verdicts (strict, --mode bfcl), speed"),
    "router": ("benchmarks.retrieval.targets_run", "Router quality and speed targets"),
    "tuning": ("benchmarks.retrieval.tuning", "APIBench Recall@5 with the encoder tuned on labelled questions"),
    "proxy": ("benchmarks.serving.proxy_overhead", "Middleware/proxy overhead per request"),
    "routing": ("benchmarks.routing.features", "Multi-tool sets, adaptive k, abstention, exact names, learning from use"),
    "language": ("benchmarks.retrieval.language", "How often the request-language check flags real queries"),
    "search": ("benchmarks.routing.search", "Routing and a tool search the model can call, side by side"),
}
FOLDERS = {"router": "router_targets"}  # results folder when it is not the command's name
# One line about a finished run, for the commands that take only --out and --quick.
SUMMARIES: dict[str, Callable[[dict], str]] = {
    "gorilla": lambda r: f"max |diff| {r['max_abs_diff']} points, {r['wall_seconds']:.1f} s",
    "bfcl": lambda r: (f"{r['correct']}/{r['entries']} correct; bfcl mode agrees on "
                       f"{r['official']['agreement']['bfcl']['agree']}/{r['official']['outputs']}"),
    "language": lambda r: __import__("benchmarks.retrieval.language", fromlist=["summary"]).summary(r),
    "tuning": lambda r: ", ".join(f"{x['hub']} hybrid {x['hybrid']:.3f} -> {x['hybrid_tuned']:.3f}" for x in r["rows"]),
    "search": lambda r: "; ".join(f"{n}: all gold {d['rows']['routing']['all_gold']:.1%} routing -> "
                                  f"{d['rows']['routing + search']['all_gold']:.1%} with search"
                                  for n, d in r["datasets"].items()),
}


def run_delegated(name: str, out: Optional[Path], quick: bool) -> dict:
    """Benchmark ``name`` with its default options: ``module.run(out, quick)``."""
    module, _ = DELEGATED[name]
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            raise BenchmarkError(f"benchmark {name!r} is not available: module {module} is missing") from None
        raise
    if not hasattr(mod, "run"):
        raise BenchmarkError(f"benchmark {name!r}: {module} has no run(out_dir, quick) function")
    target = _out(out, FOLDERS.get(name, name), quick)
    res = mod.run(target, quick)
    summary = SUMMARIES.get(name)
    typer.echo(f"wrote {target / 'report.md'}" + (f": {summary(res)}" if summary else ""))
    return res
