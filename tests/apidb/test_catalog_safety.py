"""The catalog file under concurrency and in odd states (issue #19, items 5, 6, 9, 12):
real `toolsift` processes, real SQLite files.

* two writers of one namespace run one after the other: the result is one source's
  records, never the union of both;
* read-only commands never write: another program's SQLite file stays byte-identical;
* a catalog written by a newer toolsift can be read but is never written;
* a locked catalog is reported as locked; a damaged row as that row and field;
* catalog data printed to a terminal has its control characters escaped.
"""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from tests.support.cli import _SCRIPT, toolsift
from tests.conftest import BUNDLED_GORILLA

TORCH = BUNDLED_GORILLA / "torchhub_api.jsonl"
TFHUB = BUNDLED_GORILLA / "tensorflowhub_api.jsonl"


def ids_of(source, namespace: str) -> set[str]:
    from apidb.loaders import load

    return {r.id for r in load(source, namespace=namespace).records}


def catalog_ids(db) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {rid for (rid,) in conn.execute("SELECT id FROM records")}


def one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# -- one writer per namespace ------------------------------------------------------------
def test_two_concurrent_adds_into_one_namespace_never_merge(tmp_path):
    """Two real `catalog add` processes racing on the same namespace, a few times over."""
    torch, tf = ids_of(TORCH, "shared"), ids_of(TFHUB, "shared")
    for trial in range(4):
        db = tmp_path / f"race{trial}.db"
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        procs = [subprocess.Popen([str(_SCRIPT), "catalog", "add", str(src), "--namespace", "shared", "--db", str(db)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                 for src in (TORCH, TFHUB)]
        for p in procs:
            _, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
        assert catalog_ids(db) in (torch, tf), f"trial {trial}: a merge of both sources"


HOLDER = textwrap.dedent("""
    import sqlite3, sys, time
    from apidb.rows import record_to_row
    from apidb.loaders import load
    rows = [record_to_row(r) for r in load(sys.argv[2], namespace="shared").records]
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany("INSERT INTO records VALUES (?,?,?,?,?,?,?,?,?)", rows)
    print("holding", flush=True)
    time.sleep(float(sys.argv[3]))
    conn.execute("COMMIT")
""")


def test_an_add_during_another_write_waits_then_replaces(tmp_path):
    """Deterministic form of the race: a writer holds the namespace's write open while
    `catalog add` starts; the add must wait and then replace, not read the old state and
    merge its records into the other writer's."""
    db = tmp_path / "c.db"
    assert toolsift("catalog", "add", TORCH, "--namespace", "other", db=db).returncode == 0
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db), str(TORCH), "5"],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "holding"
    proc = toolsift("catalog", "add", TFHUB, "--namespace", "shared", "--json", db=db)
    holder.wait(timeout=60)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    shared = {rid for rid in catalog_ids(db) if rid.startswith("shared/")}
    assert shared == ids_of(TFHUB, "shared")
    assert report["removed"] == len(ids_of(TORCH, "shared") - ids_of(TFHUB, "shared"))


def test_a_writer_that_cannot_get_the_lock_says_so_and_changes_nothing(tmp_path):
    db = tmp_path / "c.db"
    assert toolsift("catalog", "add", TORCH, db=db).returncode == 0
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db), str(TFHUB), "20"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        before = db.read_bytes()
        os.environ["TOOLSIFT_LOCK_TIMEOUT"] = "1"
        try:
            proc = toolsift("catalog", "remove", "--namespace", "torchhub", db=db)
        finally:
            del os.environ["TOOLSIFT_LOCK_TIMEOUT"]
        one_line_error(proc, "locked by another process", "nothing was changed")
        assert db.read_bytes() == before
    finally:
        holder.kill()
        holder.wait()


# -- read-only commands ------------------------------------------------------------------
@pytest.fixture
def foreign_db(tmp_path):
    """Another program's SQLite file (a real schema, real rows)."""
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        conn.executemany("INSERT INTO users (name) VALUES (?)", [("ann",), ("bob",)])
    return path


@pytest.mark.parametrize("args", [("catalog", "stats"), ("catalog", "list"), ("catalog", "show", "x/y"),
                                  ("catalog", "remove", "--namespace", "x"), ("route", "hello", "--method", "bm25"),
                                  ("catalog", "add", str(TORCH))])
def test_another_programs_sqlite_file_stays_byte_identical(foreign_db, args):
    before = foreign_db.read_bytes()
    one_line_error(toolsift(*args, db=foreign_db), "not a toolsift catalog", "users")
    assert foreign_db.read_bytes() == before
    assert not any(p.name.startswith(foreign_db.name + "-") for p in foreign_db.parent.iterdir())


def test_reading_a_catalog_writes_nothing(tmp_path):
    db = tmp_path / "c.db"
    assert toolsift("catalog", "add", TORCH, db=db).returncode == 0
    before, mtime = db.read_bytes(), db.stat().st_mtime_ns
    for args in (("catalog", "stats"), ("catalog", "list", "--json"), ("route", "load a resnet", "--method", "bm25")):
        assert toolsift(*args, db=db).returncode == 0
    assert db.read_bytes() == before and db.stat().st_mtime_ns == mtime


# -- a newer schema ----------------------------------------------------------------------
@pytest.fixture
def newer_db(tmp_path):
    db = tmp_path / "c.db"
    assert toolsift("catalog", "add", TORCH, db=db).returncode == 0
    with sqlite3.connect(db) as conn:  # what a future toolsift might do: a new column, a new version
        conn.execute("ALTER TABLE records ADD COLUMN embedding BLOB")
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', '2')")
    return db


def test_a_newer_catalog_is_read_but_never_written(newer_db):
    before = newer_db.read_bytes()
    listed = toolsift("catalog", "list", "--json", db=newer_db)
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) == len(ids_of(TORCH, "torchhub"))
    for args in (("catalog", "remove", "--namespace", "torchhub"), ("catalog", "add", str(TFHUB))):
        one_line_error(toolsift(*args, db=newer_db), "newer toolsift", "schema version 2", "refusing")
    assert newer_db.read_bytes() == before


def test_unknown_columns_alone_mark_a_newer_catalog(newer_db):
    with sqlite3.connect(newer_db) as conn:
        conn.execute("DELETE FROM meta WHERE key = 'schema_version'")
    before = newer_db.read_bytes()
    one_line_error(toolsift("catalog", "remove", "--namespace", "torchhub", db=newer_db), "unknown columns embedding")
    assert newer_db.read_bytes() == before


# -- a locked catalog, a damaged one, a folder that cannot exist ------------------------------
def test_a_locked_catalog_is_reported_as_locked(tmp_path):
    db = tmp_path / "c.db"
    assert toolsift("catalog", "add", TORCH, db=db).returncode == 0
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import sqlite3, sys, time
        conn = sqlite3.connect(sys.argv[1], isolation_level=None)
        conn.execute("BEGIN EXCLUSIVE")
        print("holding", flush=True)
        time.sleep(30)
    """), str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        os.environ["TOOLSIFT_LOCK_TIMEOUT"] = "0.5"
        try:
            for args in (("catalog", "stats"), ("catalog", "list"), ("route", "resnet", "--method", "bm25")):
                line = one_line_error(toolsift(*args, db=db), "locked by another process")
                assert "not a toolsift catalog" not in line
        finally:
            del os.environ["TOOLSIFT_LOCK_TIMEOUT"]
    finally:
        holder.kill()
        holder.wait()


def test_a_damaged_row_is_named_not_a_traceback(tmp_path):
    db = tmp_path / "c.db"
    assert toolsift("catalog", "add", TORCH, db=db).returncode == 0
    with sqlite3.connect(db) as conn:
        rid = conn.execute("SELECT id FROM records ORDER BY id LIMIT 1 OFFSET 3").fetchone()[0]
        conn.execute("UPDATE records SET parameters = '{\"type\": \"obj' WHERE id = ?", (rid,))
    for args in (("catalog", "list"), ("catalog", "show", rid), ("route", "resnet", "--method", "bm25")):
        one_line_error(toolsift(*args, db=db), f"record {rid!r}", "field 'parameters'", "damaged")


def test_db_in_a_folder_that_cannot_be_created(tmp_path):
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("x")
    one_line_error(toolsift("catalog", "add", TORCH, db=blocker / "sub" / "c.db"), "cannot create the catalog's folder")
    one_line_error(toolsift("catalog", "stats", db=tmp_path / "missing" / "c.db"), "no catalog here")


# -- terminal output -------------------------------------------------------------------------
def test_control_characters_in_catalog_data_are_escaped(tmp_path):
    """A tool name with ANSI escapes, a bidi override and rich markup reaches the terminal
    escaped, in the table and in --json output alike."""
    from tests.conftest import shared

    servers = json.loads(shared("livemcpbench", "tools.json").read_text(encoding="utf-8"))
    key, block = next(iter(servers[0]["tools"].items()))
    evil = "pwn\x1b[2J\x1b]0;owned\x07\u202egnp.exe[bold red]x[/]\x9b31m"
    block["tools"][0]["name"] = evil
    src = tmp_path / "tools.json"
    src.write_text(json.dumps(servers), encoding="utf-8")
    db = tmp_path / "c.db"
    added = toolsift("catalog", "add", src, db=db)
    assert added.returncode == 0 and "\x1b" not in added.stdout + added.stderr
    as_json = json.loads(toolsift("catalog", "list", "--json", db=db).stdout)
    evil_id = next(r["id"] for r in as_json if r["name"] == evil)  # escaped on the wire, the same once parsed
    for args in (("catalog", "list"), ("catalog", "list", "--json"), ("catalog", "show", evil_id),
                 ("catalog", "stats"), ("catalog", "show", evil)):
        for terminal in (False, True):  # JSON on a pipe, tables / indented JSON on a terminal
            proc = toolsift(*args, db=db, terminal=terminal)
            out = proc.stdout + proc.stderr
            for raw in ("\x1b", "\x07", "\u202e", "\x9b"):
                assert raw not in out, (args, terminal, repr(out[:300]))
    listed = toolsift("catalog", "list", db=db, terminal=True, env={"COLUMNS": "400"}).stdout
    assert "\\x1b[2J" in listed and "\\u202e" in listed and "[bold red]x[/]" in listed
