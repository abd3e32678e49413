"""The shape the ``python -m benchmarks.<name>`` entry points share: --out, --quick, one-line errors.

``toolsift bench ...`` (benchmarks/cli.py) is the main interface; these keep each benchmark
runnable on its own, as the reports' "Command:" lines say.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable

from apidb.errors import ToolsiftError


def quick_main(argv: list[str] | None, *, prog: str, doc: str, default_out: Path, quick_help: str,
               run: Callable[[Path, bool], Any], summary: Callable[[Any], str]) -> int:
    """Parse --out/--quick, call ``run(out, quick)``, print where the report went and ``summary(result)``."""
    ap = argparse.ArgumentParser(prog=f"python -m {prog}", description=doc.splitlines()[0])
    ap.add_argument("--out", type=Path, default=default_out)
    ap.add_argument("--quick", action="store_true", help=quick_help)
    args = ap.parse_args(argv)
    try:
        res = run(args.out, args.quick)
    except ToolsiftError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.out / 'report.md'}: {summary(res)}")
    return 0
