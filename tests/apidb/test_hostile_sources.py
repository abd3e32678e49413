"""Hostile catalog sources (issue #19, items 4 and 9): each is a real file from
../shared/data with the attack put in, added with the real `toolsift catalog add` in a
subprocess under a 2 GB address-space limit. Each must fail fast with one line naming
the file (and where known the record and field), exit 2, no traceback, and leave the
catalog byte-for-byte as it was.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import _SCRIPT
from tests.conftest import shared

MEMORY = 2 * 1024 ** 3
SECONDS = 30  # each case takes about a second; the limit only catches runaways


def toolsift_limited(*args: object, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess, float]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))

    cmd = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-c", "from router.cli import main; main()"]
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200", **(env or {})}
    full_env.pop("TOOLSIFT_DB", None)
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True, env=full_env,
                              timeout=SECONDS, preexec_fn=limit)
    except subprocess.TimeoutExpired:
        pytest.fail(f"toolsift {' '.join(map(str, args))} ran longer than {SECONDS}s")
    return proc, time.monotonic() - start


@pytest.fixture
def db(tmp_path):
    """A real catalog (TorchHub) the hostile source is added to."""
    from apidb import Catalog
    from apidb.loaders import load

    path = tmp_path / "catalog.db"
    with Catalog(path) as cat:
        cat.sync(load(shared("gorilla", "api", "torchhub_api.jsonl")).records)
    return path


def rejected(db: Path, source: Path | str, *must_name: str, env: dict[str, str] | None = None) -> str:
    before = db.read_bytes()
    proc, took = toolsift_limited("catalog", "add", source, "--db", db, env=env)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr + proc.stdout and "MemoryError" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr[-2000:]
    for text in (Path(source).name, *must_name):
        assert text in lines[0], lines[0]
    assert took < SECONDS
    assert db.read_bytes() == before
    return lines[0]


def spotify_yaml(tmp_path: Path, extra: str) -> Path:
    import yaml

    spec = json.loads(shared("restbench", "specs", "spotify_oas.json").read_text(encoding="utf-8"))
    text = yaml.dump(spec, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), allow_unicode=True)
    path = tmp_path / "spotify_oas.yaml"
    path.write_text(text + extra, encoding="utf-8")
    return path


LAUGHS = """x-lol:
  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
  c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
  d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
  e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
  f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
  g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
  h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
  i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def test_yaml_billion_laughs(tmp_path, db):
    assert len(LAUGHS) < 500  # a few hundred bytes asking for 10^9 values
    rejected(db, spotify_yaml(tmp_path, LAUGHS), "aliases expand", "line")


def test_yaml_self_alias(tmp_path, db):
    rejected(db, spotify_yaml(tmp_path, "x-self: &me\n  - *me\n"), "cycle", "line")


def test_yaml_aliases_within_budget_still_load(tmp_path, db):
    """Ordinary anchors (a shared parameter list) are fine: the limit is on expansion."""
    path = spotify_yaml(tmp_path, "x-shared: &s {a: 1, b: [1, 2, 3]}\nx-again: [*s, *s, *s]\n")
    proc, _ = toolsift_limited("catalog", "add", path, "--db", db, "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["added"] > 0


def test_openapi_ref_fan_out(tmp_path, db):
    """Twelve schemas each referring to the next eight times: 8^12 values if inlined."""
    spec = json.loads(shared("restbench", "specs", "tmdb_oas.json").read_text(encoding="utf-8"))
    schemas = spec.setdefault("components", {}).setdefault("schemas", {})
    for i in range(12):
        schemas[f"Fan{i}"] = {"type": "object", "properties": {c: {"$ref": f"#/components/schemas/Fan{i + 1}"}
                                                               for c in "abcdefgh"}}
    schemas["Fan12"] = {"type": "string"}
    path_item = spec["paths"]["/movie/{movie_id}/keywords"]
    path_item["get"].setdefault("parameters", []).append(
        {"name": "filter", "in": "query", "schema": {"$ref": "#/components/schemas/Fan0"}})
    bad = tmp_path / "tmdb_oas.json"
    bad.write_text(json.dumps(spec), encoding="utf-8")
    rejected(db, bad, "$ref expansion", "record 'GET /movie/{movie_id}/keywords'", "field 'parameters'")


def test_named_pipe_is_refused_not_waited_on(tmp_path, db):
    fifo = tmp_path / "spotify_oas.json"
    os.mkfifo(fifo)  # nobody ever writes to it: reading would block forever
    rejected(db, fifo, "named pipe", "regular file")


def test_device_is_refused_not_read(db):
    rejected(db, "/dev/zero", "character device", "regular file")


def test_size_limit(tmp_path, db):
    src = shared("livemcpbench", "tools.json")
    line = rejected(db, src, "limit", "TOOLSIFT_MAX_SOURCE_BYTES", env={"TOOLSIFT_MAX_SOURCE_BYTES": "100000"})
    assert f"{src.stat().st_size:,} bytes" in line


def bfcl_with(tmp_path: Path, line_index: int, edit) -> Path:
    lines = shared("bfcl", "BFCL_v4_simple_python.json").read_text(encoding="utf-8").splitlines()
    lines[line_index] = edit(lines[line_index])
    bad = tmp_path / "BFCL_v4_simple_python.json"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return bad


def test_deeply_nested_json_line(tmp_path, db):
    deep = "[" * 100_000 + "]" * 100_000
    bad = bfcl_with(tmp_path, 3, lambda l: l.replace('"description": ', f'"x-deep": {deep}, "description": ', 1))
    rejected(db, bad, "record 3", "line 4", "nested more than")


def test_deeply_nested_json_document(tmp_path, db):
    tools = json.loads(shared("livemcpbench", "tools.json").read_text(encoding="utf-8"))
    text = json.dumps(tools)
    bad = tmp_path / "tools.json"
    bad.write_text(text[:-1] + ", " + "[" * 50_000 + "]" * 50_000 + "]", encoding="utf-8")
    rejected(db, bad, "nested more than", "line 1 column")


def test_lone_surrogate(tmp_path, db):
    """``\\ud800`` is valid JSON syntax but not Unicode: SQLite cannot store it."""
    servers = json.loads(shared("livemcpbench", "tools.json").read_text(encoding="utf-8"))
    key, block = next(iter(servers[2]["tools"].items()))
    block["tools"][0]["description"] = "lookup \ud800 tool"
    bad = tmp_path / "tools.json"
    bad.write_text(json.dumps(servers), encoding="utf-8")  # ensure_ascii: written as \\ud800
    rejected(db, bad, "record 2", f"field 'tools.{key}.tools[0].description'", "lone surrogate")


def test_huge_integer(tmp_path, db):
    bad = bfcl_with(tmp_path, 5, lambda l: l.replace('"type": "dict"', '"type": "dict", "maxProperties": '
                                                     + "9" * 5000, 1))
    rejected(db, bad, "record 5", "line 6", "5,000 digits", "field 'function[0].parameters.maxProperties'")


def test_yaml_huge_integer_and_date_keys(tmp_path, db):
    rejected(db, spotify_yaml(tmp_path, "x-big: " + "9" * 5000 + "\n"), "unreadable value")
    # a date as a mapping key is JSON-shaped (its ISO text), not a crash
    path = spotify_yaml(tmp_path, "x-dates: {2020-01-01: released}\n")
    proc, _ = toolsift_limited("catalog", "add", path, "--db", db, "--json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


def test_non_string_tool_name_in_a_shared_namespace(tmp_path, db):
    """Found by fuzzing: with --namespace, names several MCP servers share are counted,
    and a list as a name raised TypeError (unhashable) before the record was judged."""
    servers = json.loads(shared("livemcpbench", "tools.json").read_text(encoding="utf-8"))
    key, block = next(iter(servers[1]["tools"].items()))
    block["tools"][0]["name"] = ["not", "a", "name"]
    bad = tmp_path / "tools.json"
    bad.write_text(json.dumps(servers), encoding="utf-8")
    before = db.read_bytes()
    proc, _ = toolsift_limited("catalog", "add", bad, "--namespace", "mcp", "--db", db)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert f"record '{key}[0]'" in proc.stderr and "field 'name'" in proc.stderr
    assert db.read_bytes() == before


def test_namespace_argument_that_is_not_utf8(db):
    """Found by fuzzing: argv bytes that are not UTF-8 reach Python as lone surrogates."""
    before = db.read_bytes()
    cmd = [str(_SCRIPT), "catalog", "add", str(shared("restbench", "specs", "spotify_oas.json")),
           "--namespace", b"spot\xffify", "--db", str(db)]
    proc = subprocess.run(cmd, capture_output=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=SECONDS)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2 and "Traceback" not in err, err[-2000:]
    assert len(err.strip().splitlines()) == 1 and "namespace" in err and "not valid Unicode" in err
    assert db.read_bytes() == before


def test_a_template_response_that_is_deeply_nested_json_text(tmp_path, db):
    """A ToolBench ``template_response`` held as JSON text is parsed for its field names (what the
    endpoint returns); text nested past the parser's depth is read for its keys, not a crash."""
    queries = json.loads(shared("stabletoolbench_solvable", "test_instruction", "G2_instruction.json")
                         .read_text(encoding="utf-8"))[:3]
    api = queries[0]["api_list"][0]
    api["template_response"] = '{"hotel_id": ' + "[" * 50_000 + "]" * 50_000 + "}"
    path = tmp_path / "G2_part.json"
    path.write_text(json.dumps(queries), encoding="utf-8")
    proc, _ = toolsift_limited("catalog", "add", path, "--format", "toolbench", "--db", db, "--json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    from apidb import Catalog

    with Catalog(db) as cat:
        rec = next(r for r in cat.records("toolbench") if r.metadata["api_name"] == api["api_name"].strip())
    assert rec.metadata["output_fields"] == ["hotel_id"]
