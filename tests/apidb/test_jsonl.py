"""The shared JSON Lines reader: line numbers survive blank lines, a bad line is named."""
from __future__ import annotations

import pytest

from apidb.jsonl import JsonLineError, parse_lines
from tests.conftest import BUNDLED_GORILLA


def test_reads_a_real_file_with_line_numbers():
    text = (BUNDLED_GORILLA / "torchhub_api.jsonl").read_text()
    rows = list(parse_lines(text))
    assert len(rows) == len([line for line in text.splitlines() if line.strip()]) > 0
    assert rows[0][0] == 1 and all(isinstance(obj, dict) and "api_call" in obj for _, obj in rows)


def test_blank_lines_keep_numbering_and_a_bad_line_is_named():
    assert list(parse_lines('{"a": 1}\n\n  \n[2]\n')) == [(1, {"a": 1}), (4, [2])]
    with pytest.raises(JsonLineError) as exc:
        list(parse_lines('{"a": 1}\n\n{"b": }\n'))
    assert (exc.value.lineno, exc.value.colno) == (3, 7) and str(exc.value).startswith("line 3 column 7:")
