"""`toolsift catalog ...` end to end: the real command on real files and a real SQLite file."""
from __future__ import annotations

import json
import shutil

from tests.support.cli import ok_json, toolsift
from tests.conftest import shared

COUNTS = ("added", "updated", "removed", "unchanged")


def jsonl_rows(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def counts(report: dict) -> dict:
    assert set(COUNTS) <= set(report) and all(isinstance(report[k], int) for k in COUNTS)
    return {k: report[k] for k in COUNTS}


def test_add_is_incremental_on_a_real_file(tmp_path):
    src = shared("gorilla", "api", "torchhub_api.jsonl")
    rows = jsonl_rows(src)
    n = len({r["api_call"] for r in rows})
    copy = tmp_path / "torchhub_api.jsonl"
    shutil.copy(src, copy)
    db = tmp_path / "c.db"

    assert counts(ok_json("catalog", "add", copy, "--json", db=db)) == {"added": n, "updated": 0, "removed": 0, "unchanged": 0}
    # re-adding the same source changes nothing
    assert counts(ok_json("catalog", "add", copy, "--json", db=db)) == {"added": 0, "updated": 0, "removed": 0, "unchanged": n}
    # one record edited in the copy: exactly one update
    rows[0]["description"] = rows[0]["description"] + " (edited)"
    write_jsonl(copy, rows)
    assert counts(ok_json("catalog", "add", copy, "--json", db=db)) == {"added": 0, "updated": 1, "removed": 0, "unchanged": n - 1}
    shown = ok_json("catalog", "show", f"torchhub/{rows[0]['api_name']}", db=db)
    assert shown["description"].endswith("(edited)")
    # one record deleted from the copy: exactly one removal
    write_jsonl(copy, rows[1:])
    assert counts(ok_json("catalog", "add", copy, "--json", db=db)) == {"added": 0, "updated": 0, "removed": 1, "unchanged": n - 1}
    assert ok_json("catalog", "stats", "--json", db=db)["namespaces"] == {"torchhub": n - 1}


def test_toolbench_files_added_together_give_their_union(tmp_path):
    files = [shared("stabletoolbench_solvable", "test_instruction", f"{g}.json")
             for g in ("G1_instruction", "G1_category", "G1_tool", "G2_instruction")]
    endpoints = {(a["category_name"], a["tool_name"], a["api_name"])
                 for f in files for q in json.loads(f.read_text(encoding="utf-8")) for a in q["api_list"]}
    db = tmp_path / "c.db"
    assert counts(ok_json("catalog", "add", *files, "--json", db=db))["added"] == len(endpoints)
    assert ok_json("catalog", "stats", "--json", db=db)["namespaces"] == {"toolbench": len(endpoints)}


def test_same_name_tools_in_two_namespaces_coexist(tmp_path):
    src = shared("livemcpbench", "tools.json")
    servers = json.loads(src.read_text(encoding="utf-8"))
    owners: dict[str, list[str]] = {}
    for s in servers:
        for key, block in s["tools"].items():
            for t in block["tools"]:
                owners.setdefault(t["name"], []).append(key)
    name, keys = next((n, k) for n, k in sorted(owners.items()) if len(k) > 1)
    db = tmp_path / "c.db"
    ok_json("catalog", "add", src, "--json", db=db)
    listed = ok_json("catalog", "list", "--json", db=db)
    same = [r for r in listed if r["name"] == name]
    assert sorted(r["namespace"] for r in same) == sorted(keys)
    # and the same file under two explicit namespaces: both copies stay
    bfcl = shared("bfcl", "BFCL_v4_simple_javascript.json")
    n = len({json.dumps(d, sort_keys=True) for r in jsonl_rows(bfcl) for d in r["function"]})
    ok_json("catalog", "add", bfcl, "--namespace", "js_a", "--json", db=db)
    ok_json("catalog", "add", bfcl, "--namespace", "js_b", "--json", db=db)
    stats = ok_json("catalog", "stats", "--json", db=db)["namespaces"]
    assert stats["js_a"] == stats["js_b"] == n
    assert sum(stats.values()) == sum(len(k) for k in owners.values()) + 2 * n


def test_stats_list_show_remove(tmp_path):
    torch = shared("gorilla", "api", "torchhub_api.jsonl")
    tmdb = shared("restbench", "specs", "tmdb_oas.json")
    spec = json.loads(tmdb.read_text(encoding="utf-8"))
    n_ops = sum(m in ("get", "post", "put", "delete", "patch") for item in spec["paths"].values() for m in item)
    n_torch = len({r["api_call"] for r in jsonl_rows(torch)})
    db = tmp_path / "c.db"
    ok_json("catalog", "add", torch, tmdb, "--json", db=db)

    stats = ok_json("catalog", "stats", "--json", db=db)
    assert stats["namespaces"] == {"torchhub": n_torch, "tmdb": n_ops}

    listed = ok_json("catalog", "list", "--namespace", "torchhub", "--json", db=db)
    assert len(listed) == n_torch
    assert all({"id", "namespace", "name", "description", "call"} <= set(r) for r in listed)
    api = ok_json("catalog", "list", "--namespace", "tmdb", "--json", db=db)
    assert all("call" not in r for r in api)  # only code-style records carry a call

    one = ok_json("catalog", "show", listed[0]["id"], db=db)
    assert one["id"] == listed[0]["id"] and one["source_format"] == "gorilla" and one["call"] == listed[0]["call"]
    human = toolsift("catalog", "stats", db=db)
    assert human.returncode == 0 and "torchhub" in human.stdout and "tmdb" in human.stdout

    assert ok_json("catalog", "remove", "--namespace", "tmdb", "--json", db=db) == {"removed": n_ops}
    assert ok_json("catalog", "stats", "--json", db=db)["namespaces"] == {"torchhub": n_torch}


def test_show_and_remove_of_unknown_things_fail_cleanly(tmp_path):
    db = tmp_path / "c.db"
    ok_json("catalog", "add", shared("gorilla", "api", "torchhub_api.jsonl"), "--json", db=db)
    for args in (("catalog", "show", "torchhub/no_such_api"), ("catalog", "remove", "--namespace", "nope")):
        proc = toolsift(*args, db=db)
        assert proc.returncode != 0 and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("error: ")
