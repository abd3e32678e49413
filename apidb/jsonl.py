"""JSON Lines reading shared by the loaders, the checker's audit and ``toolsift route --queries``.

Each caller turns a `JsonLineError` into its own package's error, so the message keeps naming
the file and the line.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator

from .safe_io import UnsafeDocument, format_trail, loads_json


class JsonLineError(ValueError):
    """One line is not JSON: ``lineno`` (1-based), ``colno`` and the parser's ``msg``.

    ``unsafe`` is set when the line is JSON but breaks a limit of `apidb.safe_io`
    (nesting, an over-long integer, a lone surrogate); its ``trail`` names the field.
    """

    def __init__(self, lineno: int, colno: int, msg: str, unsafe: UnsafeDocument | None = None) -> None:
        super().__init__(f"line {lineno} column {colno}: {msg}")
        self.lineno, self.colno, self.msg, self.unsafe = lineno, colno, msg, unsafe


def parse_lines(text: str, *, strict_unicode: bool = False) -> Iterator[tuple[int, Any]]:
    """(line number, value) for every non-blank line; blank lines are allowed anywhere.

    Every line is parsed within the limits of `apidb.safe_io`. ``strict_unicode`` also
    refuses lone surrogates (``\\ud800``): on for what is stored, off for inputs whose
    consumer judges each value itself (a query, a model output).
    """
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield lineno, loads_json(line, strict_unicode=strict_unicode)
        except json.JSONDecodeError as exc:
            raise JsonLineError(lineno, exc.colno, exc.msg) from None
        except UnsafeDocument as exc:
            where = f" (at {format_trail(exc.trail)})" if exc.trail else ""
            raise JsonLineError(lineno, exc.colno or 1, exc.reason + where, unsafe=exc) from None


class TextFileError(ValueError):
    """A file cannot be read as UTF-8 text; the message names the file and why."""


MAX_TEXT_BYTES = 1 << 30  # an input file over 1 GiB is refused, not read into memory first


def read_utf8(path: str | Path, what: str, *, max_bytes: int = MAX_TEXT_BYTES, regular_only: bool = False) -> str:
    """The text of ``path`` (line ends as Python's text mode makes them); `TextFileError` names
    the file (``what`` says which file it was meant to be).

    The one input reader's limits (issue 42): a device (``/dev/zero``) is refused, so is a file
    over ``max_bytes`` (read no further than that), and with ``regular_only`` anything but a
    regular file (a FIFO would block until a writer comes, for ever when none does)."""
    import stat as st

    try:
        mode = os.stat(path).st_mode
        if st.S_ISCHR(mode) or st.S_ISBLK(mode) or (regular_only and not st.S_ISREG(mode) and not st.S_ISDIR(mode)):
            kind = "a device" if st.S_ISCHR(mode) or st.S_ISBLK(mode) else "a FIFO" if st.S_ISFIFO(mode) else \
                "a socket" if st.S_ISSOCK(mode) else "not a regular file"
            raise TextFileError(f"{path}: cannot read {what} (it is {kind}, not a file)")
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as exc:
        raise TextFileError(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    if len(data) > max_bytes:
        raise TextFileError(f"{path}: {what} is over the limit of {max_bytes / 2**20:g} MiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TextFileError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")