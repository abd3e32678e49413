"""Where the real public data lives: ``$TOOLSIFT_SHARED_DATA``, else ``../shared/data`` beside the
repository. Every benchmark (and the test suite) finds its files through `data_root`."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from apidb.public_data import data_root
from apidb.jsonl import JsonLineError, TextFileError, parse_lines, read_utf8

from ..errors import DatasetError


def data_dir(name: str, marker: str = "", what: str = "") -> Path:
    """``data_root()/name``, or a DatasetError saying it is missing (and how to point at it).
    ``marker``: a file or folder inside it whose absence also means the data is not there."""
    path = data_root() / name
    if not (path / marker if marker else path).exists():
        raise DatasetError(f"{path}: {what or name} data not found (set TOOLSIFT_SHARED_DATA)")
    return path


def read_jsonl(path: Path) -> list[Any]:
    """Every value of a JSON Lines file (blank lines allowed); DatasetError names the file and line."""
    try:
        return [value for _, value in parse_lines(read_utf8(path, "a JSON Lines file"))]
    except TextFileError as exc:
        raise DatasetError(str(exc)) from None
    except JsonLineError as exc:
        raise DatasetError(f"{path}: malformed JSON on line {exc.lineno}: {exc.msg}") from None
