"""One behaviour suite for both catalog stores: every test runs on a SQLite file and on a fresh
database of a real throwaway PostgreSQL server (tests/support/postgres.py)."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from dataclasses import replace

import pytest

from apidb import ApiRecord, Catalog, CatalogError
from apidb.loaders import load
from apidb.record import make_id
from tests.conftest import BUNDLED_GORILLA
from tests.support.cli import toolsift
from tests.support.postgres import free_port

TORCH = BUNDLED_GORILLA / "torchhub_api.jsonl"
TFHUB = BUNDLED_GORILLA / "tensorflowhub_api.jsonl"


def rec(ns: str, name: str, desc: str = "d") -> ApiRecord:
    return ApiRecord(id=make_id(ns, name), namespace=ns, name=name, description=desc, source_format="openai")


def test_sync_counts_and_replaces_per_namespace(catalog_at):
    with Catalog(catalog_at) as cat:
        assert cat.sync([rec("a", "x"), rec("a", "y")]).to_dict() == {"added": 2, "updated": 0, "removed": 0,
                                                                      "unchanged": 0}
        assert cat.sync([rec("a", "x", "changed"), rec("a", "z")]).to_dict() == {"added": 1, "updated": 1,
                                                                                 "removed": 1, "unchanged": 0}
        cat.sync([rec("b", "x")])
        assert [r.id for r in cat.records()] == ["a/x", "a/z", "b/x"]
        assert cat.get("a/x").description == "changed" and cat.get("a/y") is None
        assert cat.namespaces() == {"a": 2, "b": 1}
        assert cat.remove_namespace("a") == 2 and cat.namespaces() == {"b": 1}


def test_generation_moves_only_on_change(catalog_at):
    with Catalog(catalog_at) as cat:
        cat.sync([rec("a", "x")])
        g = cat.generation
        cat.sync([rec("a", "x")])
        assert cat.generation == g
        cat.sync([rec("a", "x", "new")])
        assert cat.generation == g + 1


def test_a_failed_sync_changes_nothing(catalog_at):
    with Catalog(catalog_at) as cat:
        cat.sync([rec("a", "x")])
        g = cat.generation
        with pytest.raises(CatalogError, match="duplicate record id"):
            cat.sync([rec("a", "y"), rec("a", "y")])
        # a failure inside the transaction (a NOT NULL column) rolls the whole sync back
        with pytest.raises(CatalogError, match="write failed, catalog unchanged"):
            cat.sync([rec("a", "q"), replace(rec("a", "w"), name=None)])
        assert [r.id for r in cat.records()] == ["a/x"] and cat.generation == g


def test_both_stores_hold_the_same_records_and_ids(tmp_path, pg_url):
    records = load(TORCH).records + load(TFHUB).records
    with Catalog(tmp_path / "c.db") as lite, Catalog(pg_url) as pg:
        assert lite.sync(records) == pg.sync(records)
        assert lite.records() == pg.records() and lite.hashes() == pg.hashes()
        assert lite.stats() | {"path": ""} == pg.stats() | {"path": ""}
        assert lite.records("torchhub") == pg.records("torchhub")
        assert lite.get_many(["torchhub/nope", records[3].id]) == pg.get_many([records[3].id])


def test_read_only_never_writes(catalog_at):
    with Catalog(catalog_at) as cat:
        cat.sync([rec("a", "x")])
    with Catalog(catalog_at, readonly=True) as cat:
        assert len(cat) == 1
        with pytest.raises(CatalogError, match="read-only"):
            cat.sync([rec("a", "y")])


def test_opening_nothing_is_a_clear_error(tmp_path, pg_url):
    for where in (tmp_path / "missing.db", pg_url):
        with pytest.raises(CatalogError, match="no catalog here"):
            Catalog.open(where)


def test_vectors_and_snapshots_round_trip(catalog_at):
    with Catalog(catalog_at) as cat:
        cat.sync([rec("a", "x")])
        assert cat.get_vectors("fp") == {} and cat.get_snapshot("bm25") is None
        g = cat.vector_generation
        cat.put_vectors("fp", [("k1", b"\x00\x01"), ("k2", b"\x02\x03")])
        cat.put_vectors("other", [("k1", b"zz")])
        assert cat.get_vectors("fp") == {"k1": b"\x00\x01", "k2": b"\x02\x03"}
        assert cat.get_vectors("fp", ["k2", "k9"]) == {"k2": b"\x02\x03"} and cat.vector_keys("other") == {"k1"}
        cat.put_vectors("fp", [], keep_only=["k2"])  # passages no record uses any more go
        assert cat.vector_keys("fp") == {"k2"} and cat.vector_generation == g + 3
        cat.put_snapshot("bm25", '{"a": 1}', b"\x00" * 1000)
        cat.put_snapshot("bm25", '{"a": 2}', b"\x01")
        assert cat.get_snapshot("bm25") == ('{"a": 2}', b"\x01") and cat.snapshot_meta("bm25") == '{"a": 2}'


HOLDER = textwrap.dedent("""
    import sys, time
    from apidb import Catalog
    from apidb.loaders import load
    from apidb.rows import record_to_row
    cat = Catalog(sys.argv[1])
    with cat._writing():  # half of a sync, then hold the write lock
        rows = [record_to_row(r) for r in load(sys.argv[2], namespace="shared").records]
        cat._db.executemany("INSERT INTO records VALUES (?,?,?,?,?,?,?,?,?)", rows[: len(rows) // 2])
        print("holding", flush=True)
        time.sleep(float(sys.argv[3]))
        raise SystemExit(1)  # and give up: nothing of it may remain
""")


def test_two_writers_on_one_namespace_never_merge(catalog_at):
    """Two `catalog add` of different sources into one namespace at once: the catalog ends up
    holding exactly one of them, never a mix."""
    assert toolsift("catalog", "add", TORCH, "--namespace", "shared", db=catalog_at).returncode == 0
    procs: list = []
    threads = [threading.Thread(target=lambda s=s: procs.append(
        toolsift("catalog", "add", s, "--namespace", "shared", db=catalog_at))) for s in (TFHUB, TORCH, TFHUB)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(p.returncode == 0 for p in procs), [p.stderr for p in procs]
    with Catalog(catalog_at) as cat:
        held = {r.id for r in cat.records("shared")}
    assert held in ({r.id for r in load(TORCH, namespace="shared").records},
                    {r.id for r in load(TFHUB, namespace="shared").records})


def test_a_writer_that_cannot_get_the_lock_says_so_and_nothing_is_half_applied(catalog_at):
    assert toolsift("catalog", "add", TORCH, db=catalog_at).returncode == 0
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(catalog_at), str(TFHUB), "8"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding", holder.stderr.read()
        proc = toolsift("catalog", "remove", "--namespace", "torchhub", db=catalog_at,
                        env={"TOOLSIFT_LOCK_TIMEOUT": "1"})
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "another process" in lines[0] and "nothing was changed" in lines[0], lines
    finally:
        holder.wait(timeout=60)
    with Catalog(catalog_at) as cat:  # the holder gave up: none of its half-sync remains
        assert cat.namespaces() == {"torchhub": len(load(TORCH).records)}


def test_the_cli_works_on_a_server_catalog_by_flag_and_by_environment(pg_url):
    assert toolsift("catalog", "add", TORCH, "--json", db=pg_url).returncode == 0
    by_env = toolsift("catalog", "stats", "--json", env={"TOOLSIFT_DB": pg_url})
    assert by_env.returncode == 0 and '"torchhub"' in by_env.stdout
    assert "postgresql://toolsift@127.0.0.1" in by_env.stdout
    shown = toolsift("catalog", "show", load(TORCH).records[0].id, "--json", db=pg_url)
    assert shown.returncode == 0 and load(TORCH).records[0].name in shown.stdout


@pytest.mark.parametrize("args", [("catalog", "stats"), ("catalog", "add", str(TORCH)), ("index",),
                                  ("route", "classify images", "--method", "bm25"),
                                  ("serve", "openai", "--upstream", "http://127.0.0.1:9/v1", "--port", "0")])
def test_an_unreachable_server_is_one_line_and_exit_2(args):
    url = f"postgresql://toolsift@127.0.0.1:{free_port()}/nowhere"
    proc = toolsift(*args, db=url, env={"TOOLSIFT_DB_CONNECT_TIMEOUT": "2"})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "cannot connect" in lines[0], proc.stderr
