"""Tool names for models (apidb/names.py) on the bundled Gorilla catalog, whose names repeat a lot."""
from __future__ import annotations

import re
from collections import Counter

from apidb.loaders import load
from apidb.names import ToolNamer, openai_name, qualified_name, unique_names
from apidb.record import ApiRecord
from tests.conftest import BUNDLED_GORILLA

VALID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _gorilla() -> list[ApiRecord]:
    return [r for f in sorted(BUNDLED_GORILLA.glob("*_api.jsonl")) for r in load(f).records]


def test_unique_names_are_valid_unique_and_qualify_every_shared_name():
    recs = _gorilla()
    plain = Counter(openai_name(r.name) for r in recs)
    assert max(plain.values()) > 1  # the real catalog repeats names: the rule has work to do
    names = unique_names(recs)
    assert len(set(names)) == len(recs) and all(VALID.match(n) for n in names)
    for r, n in zip(recs, names):
        if plain[openai_name(r.name)] == 1:
            assert n == openai_name(r.name)
        else:  # no favourite: every holder of a shared name is qualified
            assert n.startswith(qualified_name(r.namespace, "")[:-2])


def test_tool_namer_keeps_first_names_and_never_repeats_one():
    recs = _gorilla()
    namer = ToolNamer()
    first = [namer.name(r) for r in recs]
    assert [namer.name(r) for r in recs] == first  # stable for the run
    assert len(set(first)) == len(recs) and all(VALID.match(n) for n in first)
    # two qualified names that collide ('a' + '_b' and 'a_' + 'b' both give 'a___b') still differ
    clash = [ApiRecord(id="x/b", namespace="x", name="b"), ApiRecord(id="y/_b", namespace="y", name="_b"),
             ApiRecord(id="a/_b", namespace="a", name="_b"), ApiRecord(id="a_/b", namespace="a_", name="b")]
    named = [namer.name(r) for r in clash]
    assert named[2] == "a___b" and named[3] != "a___b"
    assert len(set(named)) == 4 and len(set(first) | set(named)) == len(recs) + 4


def test_namesakes_are_told_apart_by_their_calls_when_the_catalog_is_known():
    from collections import defaultdict

    recs = _gorilla()
    by_name = defaultdict(list)
    for r in recs:
        by_name[(r.namespace, openai_name(r.name))].append(r)
    names = unique_names(recs, lambda r: by_name[(r.namespace, openai_name(r.name))])
    assert len(set(names)) == len(recs) and all(VALID.match(n) for n in names)
    shown = dict(zip((r.id for r in recs), names))
    dense = sorted(shown[r.id] for r in by_name[("torchhub", "Densenet")])
    assert dense == ["Densenet_densenet121", "Densenet_densenet161", "Densenet_densenet169", "Densenet_densenet201"]
    numbered = [n for n in names if re.search(r"_\d+$", n) and n.rsplit("_", 1)[0] in shown.values()]
    assert len(numbered) < sum(len(g) for g in by_name.values() if len(g) > 1) / 4, numbered  # a last resort
