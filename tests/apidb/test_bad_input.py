"""Bad input to `toolsift catalog add`: one line naming file/record/field, exit non-zero,
no traceback, and the catalog file byte-for-byte as it was. ``--skip-invalid`` loads the
rest and reports every skipped record.

Each bad file is a real file from ../shared/data with one defect put in.
"""
from __future__ import annotations

import json
import shutil

import pytest

from tests.support.cli import toolsift
from tests.conftest import shared


@pytest.fixture
def catalog(tmp_path):
    """A real catalog (TorchHub) and a good source to add alongside each bad one."""
    from apidb import Catalog
    from apidb.loaders import load

    db = tmp_path / "catalog.db"
    with Catalog(db) as cat:  # built in-process: only the failing add needs the real command
        assert cat.sync(load(shared("gorilla", "api", "torchhub_api.jsonl")).records).added > 0
    good = tmp_path / "tensorflowhub_api.jsonl"
    shutil.copy(shared("gorilla", "api", "tensorflowhub_api.jsonl"), good)
    return db, good


def assert_rejected(db, good, bad, *must_name: str) -> str:
    """Adding ``good`` and ``bad`` together fails cleanly and changes nothing."""
    before = db.read_bytes()
    proc = toolsift("catalog", "add", good, bad, db=db)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for text in (bad.name, *must_name):
        assert text in lines[0], lines[0]
    assert db.read_bytes() == before  # nothing of the good source was written either
    return lines[0]


def livemcp(tmp_path):
    servers = json.loads(shared("livemcpbench", "tools.json").read_text(encoding="utf-8"))
    return servers, tmp_path / "tools.json"


def test_malformed_json(tmp_path, catalog):
    text = shared("restbench", "specs", "spotify_oas.json").read_text(encoding="utf-8")
    bad = tmp_path / "spotify_oas.json"
    bad.write_text(text[: len(text) // 2], encoding="utf-8")  # cut off mid-document
    assert_rejected(*catalog, bad, "malformed JSON", "line")


def test_malformed_json_lines_names_the_line(tmp_path, catalog):
    lines = shared("bfcl", "BFCL_v4_simple_python.json").read_text(encoding="utf-8").splitlines()
    lines[7] = lines[7][:-5]
    bad = tmp_path / "BFCL_v4_simple_python.json"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert_rejected(*catalog, bad, "record 7", "line 8")


def test_malformed_yaml(tmp_path, catalog):
    import yaml

    spec = json.loads(shared("restbench", "specs", "spotify_oas.json").read_text(encoding="utf-8"))
    text = yaml.dump(spec, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), allow_unicode=True).splitlines()
    text.insert(5, "  broken: [unclosed, list")
    bad = tmp_path / "spotify_oas.yaml"
    bad.write_text("\n".join(text), encoding="utf-8")
    assert_rejected(*catalog, bad, "malformed YAML", "line")


def test_record_missing_its_name(tmp_path, catalog):
    servers, bad = livemcp(tmp_path)
    key, block = next(iter(servers[3]["tools"].items()))
    del block["tools"][1]["name"]
    bad.write_text(json.dumps(servers), encoding="utf-8")
    assert_rejected(*catalog, bad, f"record '{key}[1]'", "field 'name'")


def test_toolbench_record_missing_its_api_name(tmp_path, catalog):
    queries = json.loads(shared("stabletoolbench_solvable", "test_instruction", "G1_tool.json").read_text(encoding="utf-8"))
    del queries[2]["api_list"][1]["api_name"]
    bad = tmp_path / "G1_tool.json"
    bad.write_text(json.dumps(queries), encoding="utf-8")
    assert_rejected(*catalog, bad, f"query {queries[2]['query_id']} api_list[1]", "field 'api_name'")


def test_parameters_not_a_json_schema_object(tmp_path, catalog):
    entries = [json.loads(l) for l in shared("bfcl", "BFCL_v4_simple_python.json").read_text(encoding="utf-8").splitlines()]
    doc = entries[4]["function"][0]
    doc["parameters"] = ["not", "a", "schema"]
    bad = tmp_path / "BFCL_v4_simple_python.json"
    bad.write_text("\n".join(json.dumps(e) for e in entries), encoding="utf-8")
    assert_rejected(*catalog, bad, repr(doc["name"]), "field 'function[0].parameters'")


def test_openai_parameters_of_the_wrong_type(tmp_path, catalog):
    servers, _ = livemcp(tmp_path)
    tools = [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                               "parameters": t["inputSchema"]}}
             for b in servers[0]["tools"].values() for t in b["tools"]]
    tools.append({"type": "function", "function": {"name": "lookup", "parameters": {"type": "string"}}})
    bad = tmp_path / "tools_openai.json"
    bad.write_text(json.dumps(tools), encoding="utf-8")
    assert_rejected(*catalog, bad, "record 'lookup'", "field 'function.parameters'", "type 'object'")


def test_file_of_no_known_format(tmp_path, catalog):
    bad = tmp_path / "answers.json"
    shutil.copy(shared("bfcl", "possible_answer", "BFCL_v4_simple_python.json"), bad)
    assert_rejected(*catalog, bad, "not a known catalog format")


def test_unknown_format_option(tmp_path, catalog):
    db, good = catalog
    before = db.read_bytes()
    proc = toolsift("catalog", "add", good, "--format", "swagger9", db=db)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr and "swagger9" in proc.stderr
    assert db.read_bytes() == before


def test_wrong_forced_format(tmp_path, catalog):
    db, _ = catalog
    before = db.read_bytes()
    src = shared("livemcpbench", "tools.json")
    proc = toolsift("catalog", "add", src, "--format", "openapi", db=db)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "tools.json" in lines[0] and "OpenAPI" in lines[0]
    assert db.read_bytes() == before


def test_empty_file(tmp_path, catalog):
    bad = tmp_path / "empty.json"
    bad.write_text("  \n", encoding="utf-8")
    assert_rejected(*catalog, bad, "empty")


def test_non_utf8_file(tmp_path, catalog):
    bad = tmp_path / "tools.json"
    bad.write_bytes(shared("livemcpbench", "tools.json").read_text(encoding="utf-8").encode("gb18030"))
    assert_rejected(*catalog, bad, "UTF-8")


def test_failed_add_to_a_new_catalog_creates_no_file(tmp_path):
    db = tmp_path / "new.db"
    bad = tmp_path / "empty.json"
    bad.write_text("", encoding="utf-8")
    proc = toolsift("catalog", "add", bad, db=db)
    assert proc.returncode != 0 and not db.exists()


def test_skip_invalid_loads_the_rest_and_reports_each_skipped(tmp_path, catalog):
    db, _ = catalog
    servers, bad = livemcp(tmp_path)
    total = sum(len(b["tools"]) for s in servers for b in s["tools"].values())
    key0, block0 = next(iter(servers[0]["tools"].items()))
    key2, block2 = next(iter(servers[2]["tools"].items()))
    del block0["tools"][0]["name"]
    block2["tools"][0]["inputSchema"] = "query: string"
    bad_name = block2["tools"][0]["name"]
    bad.write_text(json.dumps(servers), encoding="utf-8")

    proc = toolsift("catalog", "add", bad, "--skip-invalid", "--json", db=db)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["added"] == total - 2 and report["skipped"] == 2
    skipped = [l for l in proc.stderr.splitlines() if l.startswith("skipped: ")]
    assert len(skipped) == 2
    assert f"record '{key0}[0]'" in skipped[0] and "field 'name'" in skipped[0] and bad.name in skipped[0]
    assert f"record {bad_name!r}" in skipped[1] and "field 'inputSchema'" in skipped[1]
    # without --skip-invalid the same file is rejected and changes nothing
    assert_rejected(db, catalog[1], bad, "field 'name'")


@pytest.mark.parametrize("fmt", ["gorilla", "openai", "openapi", "bfcl", "toolbench"])
def test_forcing_the_wrong_format_on_a_real_file_fails(fmt):
    """A LiveMCPBench server list is not silently read as some other format's records."""
    from apidb.errors import LoadError
    from apidb.loaders import load

    path = shared("livemcpbench", "tools.json")
    with pytest.raises(LoadError) as exc:
        load(path, format=fmt)
    assert str(exc.value).startswith(str(path)) and "\n" not in str(exc.value)
