"""JSON Lines reading shared by the loaders, the checker's audit and ``toolsift route --queries``.

Each caller turns a `JsonLineError` into its own package's error, so the message keeps naming
the file and the line.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator


class JsonLineError(ValueError):
    """One line is not JSON: ``lineno`` (1-based), ``colno`` and the parser's ``msg``."""

    def __init__(self, lineno: int, colno: int, msg: str) -> None:
        super().__init__(f"line {lineno} column {colno}: {msg}")
        self.lineno, self.colno, self.msg = lineno, colno, msg


def parse_lines(text: str) -> Iterator[tuple[int, Any]]:
    """(line number, value) for every non-blank line; blank lines are allowed anywhere."""
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line)
        except json.JSONDecodeError as exc:
            raise JsonLineError(lineno, exc.colno, exc.msg) from None


class TextFileError(ValueError):
    """A file cannot be read as UTF-8 text; the message names the file and why."""


def read_utf8(path: str | Path, what: str) -> str:
    """The text of ``path``; `TextFileError` names the file (``what`` says which file it was meant to be)."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise TextFileError(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise TextFileError(f"{path}: not UTF-8 text (byte {exc.start})") from None
