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


def stream_is_terminal(err: bool = False) -> bool:
    """Whether a person reads stdout (``err``: stderr); TOOLSIFT_FORCE_TERMINAL=1 says yes."""
    if not err:
        return stdout_is_terminal()
    force = os.environ.get("TOOLSIFT_FORCE_TERMINAL")
    if force is not None:
        return force.strip().lower() not in ("", "0", "false", "no")
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def fit(line: str, indent: str = "  ", *, keep_words: bool = True) -> str:
    """One line wrapped at spaces to the terminal's width, continuation lines indented; a word
    (an id, a path) is never broken, even when it is wider than the terminal, unless
    ``keep_words`` is False (prose and code: a 90-character call is folded)."""
    import textwrap

    width = terminal_width()
    if len(line) <= width:
        return line
    lead = line[: len(line) - len(line.lstrip(" "))]
    return textwrap.fill(line, width=width, initial_indent="", subsequent_indent=lead + indent,
                         break_long_words=not keep_words, break_on_hyphens=False)


def say(text: str, *, err: bool = False, wrap: bool = False, indent: str = "  ") -> None:
    """Prose, printed as is (no markup); control characters in it escaped (apidb.display), line
    breaks and tabs kept. ``wrap``: on a terminal, each line wrapped at spaces to its width
    (continuation lines indented by ``indent``); on a pipe the text stays one stable line."""
    stream = sys.stderr if err else sys.stdout
    lines = ["\t".join(printable(cell) for cell in line.split("\t")) for line in str(text).split("\n")]
    if wrap and stream_is_terminal(err):
        lines = [fit(line, indent) for line in lines]
    stream.write("\n".join(lines) + "\n")


def warn(text: str) -> None:
    say(f"warning: {text}", err=True, wrap=True)


def table(columns: Sequence[str], rows: Iterable[Sequence[Any]], *, title: str | None = None,
          keep_whole: Sequence[str] = (), right: Sequence[str] = (), styles: dict[str, Any] | None = None):
    """A rich Table that fits the terminal. Columns named in ``keep_whole`` (ids, names, files)
    are never broken: the prose columns wrap at spaces instead; when the whole ids and the
    numbers leave no room for that (a 65-character cache file and a model id at 80 columns),
    each row becomes a block: its first whole column on a line of its own, the rest below.
    ``right``: short numeric columns, right-aligned and never wrapped. ``styles``: column ->
    value -> rich style (verdict colours); rich drops colour on a pipe and under NO_COLOR."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    rows = [[str(x) for x in r] for r in rows]
    styles = styles or {}
    widest = [max([len(col)] + [len(printable(r[i])) for r in rows]) for i, col in enumerate(columns)]
    # a prose column narrower than ~20 characters reads as one word a line: blocks instead
    need = sum(w if (col in keep_whole or col in right) else min(w, 20) for col, w in zip(columns, widest))
    if keep_whole and need + 2 * (len(columns) - 1) > terminal_width():
        return _blocks(columns, rows, title, keep_whole, styles)
    # SIMPLE_HEAD: no vertical rules, so narrow terminals keep their columns for content
    t = Table(title=None if title is None else Text(printable(title)), title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for i, col in enumerate(columns):
        if col in keep_whole:
            t.add_column(col, no_wrap=True, overflow="fold", min_width=widest[i])
        elif col in right:
            t.add_column(col, no_wrap=True, justify="right", min_width=min(widest[i], 12))
        else:
            t.add_column(col, overflow="fold", ratio=1)
    for r in rows:  # catalog data: escaped, never rich markup
        t.add_row(*(Text(printable(x), style=_style(styles, col, x)) for col, x in zip(columns, r)))
    return t


def _style(styles: dict[str, Any], col: str, value: str) -> str:
    how = styles.get(col)
    return (how(value) or "") if how else ""


def _blocks(columns: Sequence[str], rows: list[list[str]], title: str | None, keep_whole: Sequence[str],
            styles: dict[str, Any]):
    """Rows too wide for a table at this width: one block per row, no id ever broken."""
    from rich.console import Group
    from rich.text import Text

    key = columns.index(keep_whole[0])
    out = [Text(printable(title))] if title else []
    for r in rows:
        # already fitted here; an id wider than the terminal is left whole for the terminal to wrap
        out.append(Text(printable(r[key]), style=_style(styles, columns[key], r[key])))
        fields = [(col, printable(x)) for i, (col, x) in enumerate(zip(columns, r)) if i != key and x]
        short = "  ".join(f"{col} {x}" for col, x in fields if len(x) <= 30)
        if short:  # the short fields share a line, each long one (a description, a call) has its own
            out.append(Text(fit("    " + short, "  ")))
        out += [Text(fit(f"    {col} {x}", "  ", keep_words=col in keep_whole)) for col, x in fields if len(x) > 30]
    blocks = Group(*out)
    blocks.fitted = True  # type: ignore[attr-defined]  # show(): print as laid out, no second wrap
    return blocks


def terminal_width() -> int:
    """Columns of the terminal ($COLUMNS first, as rich and click read it)."""
    import shutil

    return shutil.get_terminal_size((80, 24)).columns


def show(renderable: Any) -> None:
    console().print(renderable, soft_wrap=getattr(renderable, "fitted", False))


def ellipsize(text: str, n: int) -> str:
    """At most ``n`` characters; a cut is marked with an ellipsis."""
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"
