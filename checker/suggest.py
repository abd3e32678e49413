"""Nearest real names for a name that does not exist (never used to execute anything)."""
from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from .budget import check_time

_SEP = re.compile(r"[\s_\-./:]+")
MAX_NAME = 256  # longer names get no suggestions


def _norm(name: str) -> str:
    return _SEP.sub("", name.lower())


def suggest(name: str, names: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` real names closest to ``name``, best first.

    Combines a normalized exact hit (case, ``_-./`` ignored), containment of the
    normalized name in a real one (``weather`` -> ``get_weather``) and difflib's
    similarity ratio, so both typos and truncations are caught.
    """
    if not isinstance(name, str) or not name or len(name) > MAX_NAME:
        return []  # (a name of thousands of characters is no typo; comparing it costs seconds)
    pool = list(dict.fromkeys(x for x in names if isinstance(x, str) and x))
    if not pool:
        return []
    target = _norm(name)
    scored: list[tuple[float, str]] = []
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(target)
    for i, cand in enumerate(pool):
        if i % 1024 == 1023:
            check_time()  # a catalog of 100k names, within the check's deadline
        norm = _norm(cand)
        if not norm:
            continue
        matcher.set_seq1(norm)
        contained = target in norm or norm in target
        # quick_ratio bounds ratio from above: below the 0.5 cut-off ratio() cannot pass
        if not contained and (matcher.real_quick_ratio() < 0.5 or matcher.quick_ratio() < 0.5):
            continue
        score = matcher.ratio()
        if norm == target:
            score = 2.0
        elif target and contained:
            score = max(score, 0.75 + 0.25 * min(len(target), len(norm)) / max(len(target), len(norm)))
        if score >= 0.5:
            scored.append((score, cand))
    scored.sort(key=lambda t: (-t[0], len(t[1]), t[1]))
    return [c for _, c in scored[:n]]
