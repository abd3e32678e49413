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


def _namesake_groups(recs: list[ApiRecord]) -> list[tuple[list[ApiRecord], list[str]]]:
    """Each group of catalog records sharing a name, named at once with the catalog's namesakes known
    (more than the proxy ever injects together: the hardest case for the names)."""
    from collections import defaultdict

    by_name = defaultdict(list)
    for r in recs:
        by_name[openai_name(r.name)].append(r)
    return [(g, unique_names(g, lambda r: by_name[openai_name(r.name)])) for g in by_name.values() if len(g) > 1]


def test_namesakes_with_the_same_call_words_are_told_apart_by_version_call_or_description():
    """Issue 40, round 3: 27 of Gorilla's 169 namesakes were still numbered (`movenet_2`, `distilgpt2_2`,
    `model_id_imagenet_inception_v3_classification_3`) and a record whose call names no model
    (`hub.KerasLayer(model_id)`) got its callee as its name (`model_id_Sequential`). Now what differs
    between them names them: a version, a callee, a keyword, else the description; one pair is left
    whose calls and descriptions are the same but for the model's name, which the name holds already."""
    groups = _namesake_groups(_gorilla())
    shown = {r.id: n for g, names in groups for r, n in zip(g, names)}
    by_call = {r.call: shown[r.id] for g, _ in groups for r in g}
    for g, names in groups:
        assert len(set(names)) == len(g) and all(VALID.match(n) for n in names), names
    numbered = [n for g, names in groups for n in names if re.search(r"_\d+$", n) and n.rsplit("_", 1)[0] in names]
    assert len(numbered) <= 1, numbered
    assert by_call["hub.load('https://tfhub.dev/google/movenet/singlepose/lightning/3')"] == "movenet_v3"
    assert by_call["hub.load('https://tfhub.dev/google/movenet/singlepose/lightning/4')"] == "movenet_v4"
    assert by_call["pipeline('text-generation', model='distilgpt2')"] == "distilgpt2_model"
    assert by_call["pipeline('text-generation')"] == "distilgpt2"
    assert by_call["tf.keras.Sequential([hub.KerasLayer(model_id)])"] == "model_id_image_classification_inception"


def test_records_whose_calls_name_nothing_are_named_by_their_descriptions():
    """Three `model_id` tools of one namespace whose calls hold no string: before, all three were
    `model_id`, `model_id_2`, `model_id_3`; the words of each description its namesakes lack name it."""
    recs = [ApiRecord(id=f"hub/model_id~{i}", namespace="hub", name="model_id", call="hub.load(model_id)",
                      description=d) for i, d in enumerate([
                          "Detect objects in photos with an SSD MobileNet detector",
                          "Embed English sentences into 512-dimensional vectors",
                          "Segment an image into semantic regions with DeepLab"])]
    names = unique_names(recs, lambda r: recs)
    assert names == ["model_id_detect", "model_id_embed", "model_id_segment"], names


def test_namesakes_in_other_namespaces_are_still_told_apart_by_namespace():
    """Tools without a call (OpenAI, MCP) sharing a name across servers keep `server__name`: the
    namespace is what tells them apart, not a description word."""
    recs = [ApiRecord(id="web/search", namespace="web", name="search", description="Search the web for pages"),
            ApiRecord(id="files/search", namespace="files", name="search", description="Search local files by name")]
    assert unique_names(recs, lambda r: recs) == ["web__search", "files__search"]
