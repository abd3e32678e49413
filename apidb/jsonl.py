"""JSON Lines reading shared by the loaders, the checker's audit and ``toolsift route --queries``.

Each caller turns a `JsonLineError` into its own package's error, so the message keeps naming
the file and the line.
"""
from __future__ import annotations

import json
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
