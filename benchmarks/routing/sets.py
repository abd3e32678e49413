"""The data of `toolsift bench routing` beyond the labelled retrieval sets: abstention sets, queries
that name a tool, and the usage-log replay (benchmarks/routing/features.py runs and reports them).

Abstention sets (each query is routed against its own catalog; "unanswerable" = no tool of that
catalog answers it):
- ``bfcl_irrelevance``: BFCL's irrelevance questions, each against the functions its entry gives
  (none answers it, by construction of the file); answerable counterpart: BFCL simple_python and
  multiple questions against their entry's functions.
- ``stb_gold_removed``: the StableToolBench queries against the 2,231-endpoint catalog without every
  endpoint of their gold tools' APIs (a sibling endpoint of the same API could still serve, so the
  whole API goes); answerable counterpart: the same queries against the whole catalog.
- ``metatool_gold_removed``: MetaTool single-tool queries (a sample) without their gold tool;
  answerable: the same queries with it.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from ..data.datasets import load_dataset
from ..data.shared_data import data_root

BFCL_ANSWERABLE = ("BFCL_v4_simple_python.json", "BFCL_v4_multiple.json")
BFCL_IRRELEVANT = "BFCL_v4_irrelevance.json"


@dataclass
class AbstainCase:
    set: str
    id: str
    text: str
    answerable: bool
    candidates: list[str] | None   # record ids the query is routed over (None: the whole catalog)


def _half(qid: str, name: str) -> str:
    from ..retrieval.targets import _half as half

    return half(qid, name)


def _sample(items: list, n: int | None, key=lambda x: x.id) -> list:
    if n is None or len(items) <= n:
        return list(items)
    return sorted(items, key=lambda x: hashlib.sha1(str(key(x)).encode()).hexdigest())[:n]


def bfcl_cases(limit: int | None) -> tuple[list, list[AbstainCase]]:
    """The BFCL records (every function doc of the three files) and the cases."""
    from apidb.loaders import load

    from ..data.shared_data import read_jsonl

    records: dict[str, Any] = {}
    cases: list[AbstainCase] = []
    for name, answerable in [(f, True) for f in BFCL_ANSWERABLE] + [(BFCL_IRRELEVANT, False)]:
        path = data_root() / "bfcl" / name
        recs = load(path, format="bfcl").records
        where = {(e, r.name): r.id for r in recs for e in r.metadata.get("entries", [])}
        for r in recs:
            records.setdefault(r.id, r)
        rows = read_jsonl(path)
        picked = []
        for row in rows:
            text = "\n".join(m["content"] for m in row["question"][-1] if m.get("role") == "user")
            cands = [where[(row["id"], f["name"])] for f in row["function"] if (row["id"], f["name"]) in where]
            if text.strip() and cands:
                picked.append(AbstainCase("bfcl_irrelevance", row["id"], text, answerable, cands))
        cases += _sample(picked, limit)
    return list(records.values()), cases


def stb_cases(limit: int | None) -> tuple[list, list[AbstainCase]]:
    from ..data.corpora import toolbench_key

    files = ("G1_instruction", "G1_category", "G1_tool", "G2_instruction")
    sets = [load_dataset(f"stabletoolbench_{f}") for f in files]
    records = sets[0].records
    api = {r.id: toolbench_key(r)[0] for r in records}
    cases = []
    for d in sets:
        for q in _sample(d.queries, limit):
            gone = {api[g] for g in q.relevant}
            keep = [r.id for r in records if api[r.id] not in gone]
            cases += [AbstainCase("stb_gold_removed", f"{d.name}:{q.id}", q.text, True, None),
                      AbstainCase("stb_gold_removed", f"{d.name}:{q.id}", q.text, False, keep)]
    return records, cases


def metatool_cases(limit: int | None) -> tuple[list, list[AbstainCase]]:
    d = load_dataset("metatool_single")
    ids = [r.id for r in d.records]
    cases = []
    for q in _sample(d.queries, limit):
        cases += [AbstainCase("metatool_gold_removed", q.id, q.text, True, None),
                  AbstainCase("metatool_gold_removed", q.id, q.text, False, [i for i in ids if i not in q.relevant])]
    return d.records, cases


# --- queries that name a tool -------------------------------------------------------------------

NAME_CATALOGS = {  # catalog -> naming style
    "apibench_huggingface": "Gorilla model ids (org/model)",
    "bfcl_live_multiple": "OpenAI function names (module.function)",
    "livemcpbench": "MCP server__tool",
    "stabletoolbench_G1_tool": "RapidAPI endpoints (ToolBench function names, API + endpoint)",
}


def _variants(name: str) -> dict[str, str]:
    from router.ranking.exact_names import name_parts

    parts = name_parts(name)
    return {"as written": name, "lower, spaces": " ".join(parts), "Title Case": " ".join(p.title() for p in parts),
            "snake_case": "_".join(parts), "dotted": ".".join(parts), "camelCase": parts[0] + "".join(
                p.title() for p in parts[1:])}


def name_queries(catalog: str, records: list, per_catalog: int) -> list[tuple[str, str, str]]:
    """(record id, variant style, query) for a sample of records whose name is distinctive and unique.

    The query names the tool and says what it is for in the words of its own description, as a
    user who knows the tool would: "use <name> to <first words of its description>". MCP tools are
    named ``server__tool``; RapidAPI endpoints by their API and endpoint name ("TheClique Songkick
    concert") and by their ToolBench function name.
    """
    from router.ranking.exact_names import NameTable, name_parts

    table = NameTable(records)
    out = []
    for r in _sample(records, per_catalog * 3, key=lambda r: r.id):
        names = [f"{r.namespace}__{r.name}"] if catalog == "livemcpbench" else [r.name]
        md = r.metadata or {}
        if catalog.startswith("stabletoolbench") and md.get("tool_name") and md.get("api_name"):
            names.append(f"{md['tool_name']} {md['api_name']}")
        names = [n for n in names if table.by_key.get("".join(name_parts(n))) == [records.index(r)]]
        if not names:
            continue
        purpose = " ".join((r.description or "").split()[:8]).rstrip(".,;:") or "do it"
        for name in names:
            for style, variant in _variants(name).items():
                out.append((r.id, style, f"Use {variant} to {purpose[0].lower() + purpose[1:]}"))
        if len({rid for rid, _, _ in out}) >= per_catalog:
            break
    return out
