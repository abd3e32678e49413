"""Nearest real names for a name that does not exist (never used to execute anything)."""
from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from .budget import check_time

_SEP = re.compile(r"[\s_\-./:]+")
_NORMS: dict[str, str] = {}
MAX_NAME = 256  # longer names get no suggestions


def _norm(name: str) -> str:
    out = _NORMS.get(name)
    if out is None:
        if len(_NORMS) >= 65536:
            _NORMS.clear()
        out = _NORMS[name] = _SEP.sub("", name.lower())
    return out


def suggest(name: str, names: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` real names closest to ``name``, best first.

    Combines a normalized exact hit (case, ``_-./`` ignored), containment of the
    normalized name in a real one (``weather`` -> ``get_weather``) and difflib's
    similarity ratio, so both typos and truncations are caught.

    Speed (the strict checker suggests for every unknown tool or parameter): a
    contained name's score is its containment score (difflib's ratio can never
    beat it), and the ratio is only computed for candidates whose length-based and
    character-count upper bounds can still reach the n-th best score so far, taking
    candidates by decreasing length bound. The result is the same as scoring all.
    """
    if not isinstance(name, str) or not name or len(name) > MAX_NAME:
        return []  # (a name of thousands of characters is no typo; comparing it costs seconds)
    pool = list(dict.fromkeys(x for x in names if isinstance(x, str) and x))
    if not pool:
        return []
    target = _norm(name)
    scored: list[tuple[float, str]] = []
    rest: list[tuple[float, str, str]] = []
    lt = len(target)
    for i, cand in enumerate(pool):
        if i % 1024 == 1023:
            check_time()  # a catalog of 100k names, within the check's deadline
        norm = _norm(cand)
        if not norm:
            continue
        if norm == target:
            scored.append((2.0, cand))
        elif target and (target in norm or norm in target):
            short, long_ = sorted((lt, len(norm)))
            scored.append((0.75 + 0.25 * short / long_, cand))
        else:
            rest.append((2.0 * min(lt, len(norm)) / (lt + len(norm)), cand, norm))  # real_quick_ratio
    if rest:
        rest.sort(key=lambda t: -t[0])
        matcher = difflib.SequenceMatcher(autojunk=False)
        matcher.set_seq2(target)
        for bound, cand, norm in rest:
            floor = _floor(scored, n)
            if bound < floor:
                break  # every later candidate has a lower bound still
            matcher.set_seq1(norm)
            if matcher.quick_ratio() < floor:
                continue
            score = matcher.ratio()
            if score >= 0.5:
                scored.append((score, cand))
    scored.sort(key=lambda t: (-t[0], len(t[1]), t[1]))
    return [c for _, c in scored[:n]]


def _floor(scored: list[tuple[float, str]], n: int) -> float:
    """The score a candidate needs to possibly enter the top ``n`` (ties may, by name)."""
    if len(scored) < n:
        return 0.5
    return max(0.5, sorted((s for s, _ in scored), reverse=True)[n - 1])
