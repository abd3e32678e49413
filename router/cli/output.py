"""How every command prints results: tables for a person at a terminal, JSON for everything else.

The rule (docs/cli.md, "Output and exit codes"): when stdout is a terminal a command prints tables
and sentences; when stdout is a pipe or a file, or with ``--json``, it prints JSON (one object,
or JSON Lines for one result per input). Warnings, progress and summaries go to stderr, so stdout
stays machine-readable either way.

rich is imported only when a table is actually drawn: a piped `toolsift route` never loads it.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Iterable, Sequence

from apidb.display import json_text, printable

# Exit codes every command uses (docs/cli.md).
OK, DEFECTIVE, USAGE, INTERRUPTED = 0, 1, 2, 130


def stdout_is_terminal() -> bool:
    """Whether a person reads stdout. TOOLSIFT_FORCE_TERMINAL=1 says yes (for tests and `script`-less
    recordings); a pipe, a file or a closed stdout say no."""
    force = os.environ.get("TOOLSIFT_FORCE_TERMINAL")
    if force is not None:
        return force.strip().lower() not in ("", "0", "false", "no")
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def wants_json(flag: bool) -> bool:
    """JSON when asked for, or when nobody is reading stdout at a terminal."""
    return flag or not stdout_is_terminal()


def dumps(value: Any) -> str:
    """One line of JSON; control and reordering characters of catalog data written as \\u escapes
    (apidb.display), so a hostile tool description cannot drive the terminal."""
    return json_text(value, default=str)


def print_json(value: Any) -> None:
    """One JSON value on one line."""
    sys.stdout.write(dumps(value) + "\n")


def print_jsonl(rows: Iterable[Any]) -> None:
    sys.stdout.writelines(dumps(r) + "\n" for r in rows)
    sys.stdout.flush()


def console(stderr: bool = False):
    """A rich Console that never wraps a line it was told not to (soft_wrap) and never guesses
    colour for a file."""
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=False)


def say(text: str, *, err: bool = False) -> None:
    """Prose, printed as is (no markup, no wrapping); control characters in it escaped
    (apidb.display), line breaks and tabs kept."""
    stream = sys.stderr if err else sys.stdout
    stream.write("\n".join("\t".join(printable(cell) for cell in line.split("\t"))
                            for line in str(text).split("\n")) + "\n")


def warn(text: str) -> None:
    say(f"warning: {text}", err=True)


def table(columns: Sequence[str], rows: Iterable[Sequence[Any]], *, title: str | None = None,
          keep_whole: Sequence[str] = (), right: Sequence[str] = ()):
    """A rich Table. Columns named in ``keep_whole`` (ids, names) are never broken inside a word:
    at 80 columns rich folded ``huggingface/facebook_bart-large-cnn`` mid-word; now the prose
    columns wrap at spaces instead, and only an id wider than the whole terminal is folded.
    ``right``: short numeric columns, right-aligned and never wrapped."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    rows = [[str(x) for x in r] for r in rows]
    # SIMPLE_HEAD: no vertical rules, so narrow terminals keep their columns for content
    t = Table(title=None if title is None else Text(printable(title)), title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for i, col in enumerate(columns):
        widest = max([len(col)] + [len(r[i]) for r in rows])
        if col in keep_whole:
            t.add_column(col, no_wrap=True, overflow="fold", min_width=min(widest, 60))
        elif col in right:
            t.add_column(col, no_wrap=True, justify="right", min_width=min(widest, 12))
        else:
            t.add_column(col, overflow="fold", ratio=1)
    for r in rows:  # catalog data: escaped, never rich markup
        t.add_row(*(Text(printable(x)) for x in r))
    return t


def terminal_width() -> int:
    """Columns of the terminal ($COLUMNS first, as rich and click read it)."""
    import shutil

    return shutil.get_terminal_size((80, 24)).columns


def show(renderable: Any) -> None:
    console().print(renderable)


def ellipsize(text: str, n: int) -> str:
    """At most ``n`` characters; a cut is marked with an ellipsis."""
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"
