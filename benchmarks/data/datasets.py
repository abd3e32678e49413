"""Retrieval benchmark datasets built from the real files in ``../shared/data``.

Each dataset is a corpus of `ApiRecord`s (built with `apidb.loaders` where a loader
exists, so the record ids are the ones a catalog holds) plus labelled queries whose
``relevant`` sets are record ids of that corpus. Label problems (gold names that
match no record) are never silently fixed: they are dropped and counted in
``Dataset.notes``.
"""
from __future__ import annotations

import csv
import hashlib
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from apidb.record import ApiRecord

from ..errors import DatasetError
from .shared_data import data_root, read_jsonl

from . import corpora


@dataclass
class Query:
    id: str
    text: str
    relevant: set[str]
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Dataset:
    name: str
    records: list[ApiRecord]
    queries: list[Query]
    notes: list[str] = field(default_factory=list)

    @property
    def record_ids(self) -> set[str]:
        return {r.id for r in self.records}


STB_FILES = ("G1_instruction", "G1_category", "G1_tool", "G2_instruction")
APIBENCH = {"torchhub": "torchhub", "tensorflowhub": "tensorflow", "huggingface": "huggingface"}
METATOOL_PER_TOOL = 20  # queries sampled per tool from all_clean_data.csv (20,614 rows)

# dataset name -> files (relative to the data root) it needs
_FILES: dict[str, tuple[str, ...]] = {
    **{f"apibench_{hub}": (f"gorilla/api/{hub}_api.jsonl", f"gorilla/apibench/{ev}_eval.json")
       for hub, ev in APIBENCH.items()},
    **{f"stabletoolbench_{f}": tuple(f"stabletoolbench_solvable/test_instruction/{g}.json" for g in STB_FILES)
       for f in STB_FILES},
    "metatool_single": ("metatool/plugin_des.json", "metatool/data/all_clean_data.csv"),
    "metatool_multi": ("metatool/plugin_des.json", "metatool/data/multi_tool_query_golden.json"),
    "restbench_tmdb": ("restbench/specs/tmdb_oas.json", "restbench/datasets/tmdb.json"),
    "restbench_spotify": ("restbench/specs/spotify_oas.json", "restbench/datasets/spotify.json"),
    "livemcpbench": ("livemcpbench/tools.json", "livemcpbench/all_annotations.json"),
    "seal_tools": ("seal_tools/tool.jsonl", "seal_tools/test_in_domain.jsonl", "seal_tools/test_out_domain.jsonl"),
    "bfcl_live_multiple": ("bfcl/BFCL_v4_live_multiple.json", "bfcl/possible_answer/BFCL_v4_live_multiple.json"),
}
DATASETS: tuple[str, ...] = tuple(_FILES)


def required_files(name: str) -> tuple[str, ...]:
    """The files (relative to the data root) dataset ``name`` is built from."""
    if name not in _FILES:
        raise DatasetError(f"unknown dataset {name!r} (choose from: {', '.join(DATASETS)})")
    return _FILES[name]


def available(name: str) -> bool:
    """Whether every file dataset ``name`` needs is present."""
    if name not in _FILES:
        raise DatasetError(f"unknown dataset {name!r} (choose from: {', '.join(DATASETS)})")
    root = data_root()
    return all((root / rel).is_file() for rel in _FILES[name])


def load_dataset(name: str) -> Dataset:
    """Load one benchmark dataset; a fresh `Dataset` each call (corpora are cached)."""
    if not available(name):
        missing = [rel for rel in _FILES[name] if not (data_root() / rel).is_file()]
        raise DatasetError(f"dataset {name!r}: missing {data_root() / missing[0]} "
                           "(set TOOLSIFT_SHARED_DATA to the shared data folder)")
    if name.startswith("apibench_"):
        return _apibench(name.removeprefix("apibench_"))
    if name.startswith("stabletoolbench_"):
        return _stabletoolbench(name.removeprefix("stabletoolbench_"))
    if name.startswith("restbench_"):
        return _restbench(name.removeprefix("restbench_"))
    builder: Callable[[], Dataset] = {"metatool_single": _metatool_single, "metatool_multi": _metatool_multi,
               "livemcpbench": _livemcpbench, "seal_tools": _seal_tools,
               "bfcl_live_multiple": _bfcl_live_multiple}[name]
    return builder()


# --- helpers ---------------------------------------------------------------------------

def _path(rel: str) -> Path:
    return data_root() / rel


def _json(rel: str) -> Any:
    try:
        return json.loads(_path(rel).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{_path(rel)}: malformed JSON at line {exc.lineno}: {exc.msg}") from None


def _jsonl(rel: str) -> list[Any]:
    return read_jsonl(_path(rel))


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _finish(name: str, records: list[ApiRecord], queries: list[Query], notes: list[str]) -> Dataset:
    """Drop queries left without any resolvable label, and say how many."""
    kept = [q for q in queries if q.relevant]
    if len(kept) < len(queries):
        notes.append(f"{len(queries) - len(kept)} queries dropped: none of their gold labels resolves to a record")
    ids = {r.id for r in records}
    for q in kept:  # a label outside the corpus is a bug in this module, not in the data
        assert q.relevant <= ids, (name, q.id, q.relevant - ids)
    return Dataset(name, records, kept, notes)


# --- APIBench ----------------------------------------------------------------------------

# "###Instruction: ... ###Output" (a few rows: "### Instruction", or no output part at all)
_INSTRUCTION = re.compile(r"###\s*Instruction:\s*(.*?)\s*(?:###\s*Output|\Z)", re.S)


def _apibench(hub: str) -> Dataset:
    records = corpora.gorilla(hub)
    by_call = {_squash(r.call or ""): r.id for r in records}
    by_name = defaultdict(list)
    by_domain = defaultdict(set)
    for r in records:
        by_name[r.name].append(r.id)
        for d in r.metadata.get("domains") or [r.metadata.get("domain")]:
            by_domain[d].add(r.id)
    rows = _jsonl(_FILES[f"apibench_{hub}"][1])
    queries: list[Query] = []
    by_api_name = no_text = 0
    for i, row in enumerate(rows, 1):  # line i is question_id i (README §1.2)
        m = _INSTRUCTION.search(row.get("code", ""))
        if not m:
            no_text += 1
            continue
        gold = by_call.get(_squash(row["api_call"]))
        if gold is None and len(by_name.get(row["api_data"]["api_name"], [])) == 1:
            gold = by_name[row["api_data"]["api_name"]][0]  # same API, gold call differs in extra args
            by_api_name += 1
        domain = row["api_data"]["domain"]
        queries.append(Query(str(i), m.group(1).strip(), {gold} if gold else set(),
                             {"domain": domain, "domain_relevant": set(by_domain.get(domain, ()))}))
    notes = [f"corpus: {hub} API database deduplicated on api_call by the gorilla loader ({len(records)} records)",
             "relevant = the record whose api_call equals the gold api_call (whitespace-insensitive); "
             "meta['domain_relevant'] = every record of the gold domain"]
    if by_api_name:
        notes.append(f"{by_api_name} gold calls are absent from the API database verbatim (extra arguments); "
                     "resolved by their unique api_name instead")
    if no_text:
        notes.append(f"{no_text} rows without an '###Instruction:' block skipped")
    return _finish(f"apibench_{hub}", records, queries, notes)


def apibench_training(hub: str = "torchhub") -> list[Query]:
    """The published APIBench *training* questions of a hub (only TorchHub's are in ../shared),
    labelled like the eval questions. They share no question with the eval file verbatim."""
    path = _path(f"gorilla/apibench/{hub}_train.json")
    if not path.is_file():
        raise DatasetError(f"{path}: missing (APIBench training questions for {hub})")
    records = corpora.gorilla(hub)
    by_call = {_squash(r.call or ""): r.id for r in records}
    out: list[Query] = []
    for i, row in enumerate(_jsonl(f"gorilla/apibench/{hub}_train.json"), 1):
        m = _TRAIN_INSTRUCTION.search(row.get("code", ""))
        gold = by_call.get(_squash(row.get("api_call", "")))
        if not m or gold is None:
            raise DatasetError(f"{path}: line {i}: no 'Instruction' text or an api_call not in the {hub} database")
        out.append(Query(f"train-{i}", m.group(1).strip(), {gold}, {}))
    return out


# "{'Instruction': ..., 'Output': {...}}" in the training files
_TRAIN_INSTRUCTION = re.compile(r"'Instruction'\s*:\s*(.*?),\s*'Output'", re.S)


# --- StableToolBench ---------------------------------------------------------------------

def _stabletoolbench(group: str) -> Dataset:
    records = corpora.stabletoolbench(tuple(_FILES[f"stabletoolbench_{group}"]))
    by_pair = defaultdict(set)
    for r in records:
        by_pair[corpora.toolbench_key(r)].add(r.id)
    queries = []
    for q in _json(f"stabletoolbench_solvable/test_instruction/{group}.json"):
        rel: set[str] = set()
        for tool, api in q["relevant APIs"]:  # some names carry stray spaces, as the loader strips them
            rel |= by_pair.get((tool.strip(), api.strip()), set())
        cands = {i for a in q["api_list"] for i in by_pair.get((a["tool_name"].strip(), a["api_name"].strip()), ())}
        queries.append(Query(str(q["query_id"]), q["query"], rel,
                             {"group": group, "candidates": cands, "gold_pairs": [list(p) for p in q["relevant APIs"]]}))
    notes = [f"corpus: union of the api_list entries of the four staged files ({len(records)} endpoints)",
             "relevant = the gold 'relevant APIs' [tool, api] pairs; a pair whose tool name occurs in two "
             "categories maps to both endpoints"]
    return _finish(f"stabletoolbench_{group}", records, queries, notes)


# --- MetaTool ------------------------------------------------------------------------------

def _metatool_records() -> tuple[list[ApiRecord], dict[str, str]]:
    records = corpora.metatool()
    return records, {r.name: r.id for r in records}


def _metatool_single() -> Dataset:
    records, by_name = _metatool_records()
    per_tool: dict[str, list[str]] = defaultdict(list)
    with _path("metatool/data/all_clean_data.csv").open(encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            per_tool[row["Tool"]].append(row["Query"])
    queries = []
    total = sum(len(v) for v in per_tool.values())
    for tool in sorted(per_tool):
        # deterministic sample: the queries with the smallest sha1, so it is stable and order-free
        picked = sorted(set(per_tool[tool]), key=lambda s: hashlib.sha1(s.encode()).hexdigest())[:METATOOL_PER_TOOL]
        for text in picked:
            qid = hashlib.sha1(f"{tool}\0{text}".encode()).hexdigest()[:12]
            queries.append(Query(qid, text, {by_name[tool]} if tool in by_name else set(), {"tool": tool}))
    notes = [f"corpus: the {len(records)} tools of plugin_des.json (name + description)",
             f"queries: up to {METATOOL_PER_TOOL} distinct queries per tool (smallest sha1) from all_clean_data.csv "
             f"({len(queries)} of {total} rows)"]
    return _finish("metatool_single", records, queries, notes)


def _metatool_multi() -> Dataset:
    records, by_name = _metatool_records()
    queries = []
    for i, row in enumerate(_json("metatool/data/multi_tool_query_golden.json")):
        queries.append(Query(str(i), row["query"], {by_name[t] for t in row["tool"] if t in by_name},
                             {"tools": list(row["tool"])}))
    notes = [f"corpus: the {len(records)} tools of plugin_des.json", "relevant = the 2 gold tools of each query"]
    return _finish("metatool_multi", records, queries, notes)


# --- RestBench -------------------------------------------------------------------------------

def _restbench(api: str) -> Dataset:
    records = corpora.openapi(f"restbench/specs/{api}_oas.json", api)
    by_op = {corpora.openapi_key(r): r.id for r in records}
    queries, unusable = [], []
    for i, row in enumerate(_json(f"restbench/datasets/{api}.json")):
        rel = set()
        for sol in row["solution"]:
            method, _, path = " ".join(sol.split()).partition(" ")  # stray whitespace in the labels
            rid = by_op.get((method.upper(), path))
            if rid is None:
                unusable.append(sol.strip())
            else:
                rel.add(rid)
        queries.append(Query(str(i), row["query"], rel, {"solution": list(row["solution"])}))
    notes = [f"corpus: the {len(records)} operations of {api}_oas.json",
             "gold 'METHOD /path' strings normalized for stray whitespace"]
    if unusable:
        notes.append(f"{len(unusable)} gold labels match no spec operation and were dropped "
                     f"(known bad labels, README-extra §4): {sorted(set(unusable))}")
    return _finish(f"restbench_{api}", records, queries, notes)


# --- LiveMCPBench ----------------------------------------------------------------------------

def _livemcpbench() -> Dataset:
    records = corpora.mcp("livemcpbench/tools.json")
    by_name = defaultdict(set)
    for r in records:
        by_name[r.name].add(r.id)
    queries, mentions, unusable = [], 0, []
    for row in _json("livemcpbench/all_annotations.json"):
        tools_text = (row.get("Annotator Metadata") or {}).get("Tools") or ""
        rel: set[str] = set()
        for line in tools_text.splitlines():
            name = re.sub(r"^\s*\d+[.)]\s*", "", line).strip()
            if not name:
                continue
            mentions += 1
            if name in by_name:
                rel |= by_name[name]  # a name several servers share: each of them is a right answer
            else:
                unusable.append(name)
        queries.append(Query(str(row["task_id"]), row["Question"], rel, {"category": row.get("category")}))
    notes = [f"corpus: the {len(records)} tools of the {len({r.namespace for r in records})} MCP servers in tools.json",
             f"labels: {mentions} tool mentions in the annotations, exact-name matches only; "
             f"{len(unusable)} unusable (no tool of that exact name): {sorted(set(unusable))}",
             "a tool name several servers expose maps to all of them"]
    return _finish("livemcpbench", records, queries, notes)


# --- Seal-Tools ------------------------------------------------------------------------------

def _seal_tools() -> Dataset:
    records = corpora.seal_tools()
    by_name = {r.name: r.id for r in records}
    queries, unusable = [], 0
    for split in ("test_in_domain", "test_out_domain"):
        for row in _jsonl(f"seal_tools/{split}.jsonl"):
            apis = [c["api"] for c in row.get("calling", [])]
            unusable += sum(a not in by_name for a in apis)
            queries.append(Query(row["id"], row["query"], {by_name[a] for a in apis if a in by_name},
                                 {"split": split, "calls": len(apis)}))
    notes = [f"corpus: the {len(records)} tools of tool.jsonl (LLM-generated tools)",
             "queries: test_in_domain + test_out_domain; relevant = the distinct apis of the gold calls",
             f"{unusable} gold calls name no tool"]
    return _finish("seal_tools", records, queries, notes)


# --- BFCL live_multiple ------------------------------------------------------------------------

def _bfcl_live_multiple() -> Dataset:
    q_rel, a_rel = _FILES["bfcl_live_multiple"]
    records, entry_doc = corpora.bfcl(q_rel)
    answers = {a["id"]: a for a in _jsonl(a_rel)}
    queries = []
    for row in _jsonl(q_rel):
        gold_names = [next(iter(call)) for call in answers[row["id"]]["ground_truth"]]
        docs = {f["name"]: entry_doc[(row["id"], f["name"])] for f in row["function"]}
        text = "\n".join(m["content"] for m in row["question"][-1] if m["role"] == "user")
        queries.append(Query(row["id"], text, {docs[n] for n in gold_names if n in docs},
                             {"candidates": set(docs.values()), "gold": gold_names}))
    notes = [f"corpus: every function doc of BFCL_v4_live_multiple.json, exact duplicates merged ({len(records)})",
             "relevant = the doc of the called function as given in that entry; same-name docs whose text "
             "differs are distinct records and do not count as hits"]
    return _finish("bfcl_live_multiple", records, queries, notes)

