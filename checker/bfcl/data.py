"""BFCL questions (function docs) and possible answers by question id, from a BFCL data folder.

The folder holds BFCL's ``BFCL_v4_<category>.json`` question files (one JSON object per
line, ``function`` = the docs) and ``possible_answer/BFCL_v4_<category>.json`` (``ground_truth``),
as in the gorilla repository. A line of ``toolsift check --mode bfcl`` that carries
only a question id and the calls is checked against them.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from apidb.public_data import data_root

from .errors import BfclInputError

_FILE = re.compile(r"BFCL_v\d+_(.+)\.json$")


def default_dir() -> Path:
    """$TOOLSIFT_BFCL_DATA, else $TOOLSIFT_SHARED_DATA/bfcl, else ../shared/data/bfcl next to the repository."""
    if os.environ.get("TOOLSIFT_BFCL_DATA"):
        return Path(os.environ["TOOLSIFT_BFCL_DATA"])
    return data_root() / "bfcl"


def _rows(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BfclInputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BfclInputError(f"{path}: line {n}: malformed JSON ({exc.msg})") from None
            if not isinstance(row, dict) or "id" not in row:
                raise BfclInputError(f"{path}: line {n}: expected an object with an 'id'")
            rows.append(row)
    return rows


class BfclData:
    """Question id -> (category, function docs, possible answer), loaded on first lookup."""

    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root) if root is not None else default_dir()
        self._index: dict[str, tuple[str, Any, Any]] | None = None

    def _load(self) -> dict[str, tuple[str, Any, Any]]:
        answers_dir = self.root / "possible_answer"
        files = sorted(answers_dir.glob("BFCL_v*_*.json")) if answers_dir.is_dir() else []
        if not files:
            raise BfclInputError(f"{self.root}: no BFCL possible answers here (expected possible_answer/"
                                 "BFCL_v4_<category>.json; pass --bfcl-data DIR or set TOOLSIFT_BFCL_DATA)")
        index: dict[str, tuple[str, Any, Any]] = {}
        for answers in files:
            m = _FILE.search(answers.name)
            category = m.group(1) if m else answers.stem
            questions = {q["id"]: q for q in _rows(self.root / answers.name)} \
                if (self.root / answers.name).exists() else {}
            for a in _rows(answers):
                q = questions.get(a["id"])
                if q is None:
                    raise BfclInputError(f"{answers}: question {a['id']!r} is not in {self.root / answers.name}")
                index[a["id"]] = (category, q.get("function"), a.get("ground_truth"))
        return index

    def lookup(self, question_id: Any) -> tuple[str, Any, Any]:
        """(category, functions, ground_truth) of a question; raises if it has no possible answer."""
        if self._index is None:
            self._index = self._load()
        hit = self._index.get(question_id) if isinstance(question_id, str) else None
        if hit is None:
            raise BfclInputError(f"question id {question_id!r} has no BFCL possible answer in {self.root}")
        return hit
