"""A file the request writes to is a part of its own (router.ranking.output_file), on real requests:
LiveMCPBench (527 MCP tools, requests that end "... and save it to /root/markdown/x.md"), with the
shipped general encoder; the library and the installed script."""
from __future__ import annotations

import json
import re

import pytest

from router import Router
from router.ranking.output_file import output_spans
from tests.support.cli import toolsift
from tests.support.implied_steps import with_and_without
from tests.support.toolsets import dataset


@pytest.fixture(scope="module")
def live():
    return dataset("livemcpbench")


def _writes(ds) -> set[str]:
    return {r.id for r in ds.records if r.name == "write_file"}


def test_a_file_the_request_writes_to_is_found_and_one_it_reads_is_not(live):
    """Against the dataset's own labels: a request whose gold set holds a file-writing tool names an
    output file; a path the request only reads from ("Read the paper in /root/pdf/WebArena.pdf") is
    no output."""
    writes = _writes(live)
    found = missed = reads = 0
    for q in live.queries:
        spans = output_spans(q.text)
        for s, e in spans:
            clause = q.text[s:e]
            assert re.search(r"/[\w.-]+\.\w+$", clause), (q.id, clause)  # ends with the path
            assert not re.match(r"(?i)read\b", clause), (q.id, clause)
        if q.relevant & writes:
            found += bool(spans)
            missed += not spans
        elif re.search(r"(?i)\bread\b[^.]*?/root/\S+\.\w+", q.text) and not re.search(
                r"(?i)\b(?:save|write|generate|create)", q.text):
            reads += 1
            assert not spans, (q.id, q.text)
    # measured: 16 of the 18 requests whose gold writes a file ("Give me a markdown report on <path>"
    # and one with no path are the two left); requests that only read a path: 3
    assert found >= 15 and missed <= 3 and reads >= 2, (found, missed, reads)


def test_an_output_file_brings_the_tools_that_write_files_after_the_first_five(live):
    """The shipped general encoder, with and without the output file's part: the file-writing tools the
    gold sets ask for come into the top 10 after the first five places, which never move, each saying
    the clause it is there for; a request with no output file routes exactly as before."""
    router = Router(live.records)  # the default encoder with its own defaults
    assert router.config.output_file
    off = router.configured(output_file=False)
    with_output, gold_off, gold_on, _ = with_and_without(router, off, live.queries, output_spans, _writes(live))
    # measured on the 27 requests naming an output file: 10 -> 30 gold file-writing tools in the top 10
    assert with_output >= 20 and gold_on >= gold_off + 12, (with_output, gold_off, gold_on)


def test_a_catalog_with_no_tool_that_writes_files_gets_nothing_from_it():
    """RestBench TMDB (54 read-only endpoints of a movie API): its real multi-step requests with an
    output clause added bring no tool for that clause. The floor holds each candidate to the vector of
    what the clause asks for, and no TMDB endpoint resembles writing a file."""
    ds = dataset("restbench_tmdb")
    router = Router(ds.records)
    off = router.configured(output_file=False)
    for q in [q for q in ds.queries if len(q.relevant) > 1][:40]:
        text = q.text.rstrip(". ") + ", and save the answer to /root/out/answer.md."
        clause = next(text[s:e] for s, e in output_spans(text))
        on = router.select(text, k=10, adaptive=False)
        assert not [s.record.name for s in on if s.reason == "part" and s.part == clause], q.id
        assert [s.record.id for s in on][:5] == [s.record.id for s in off.select(text, k=10, adaptive=False)][:5]


def test_route_json_names_the_output_clause_each_file_writing_tool_is_there_for(live, tmp_path):
    """The installed script over a LiveMCPBench catalog, indexed with the default encoder: both
    servers' write_file tools come with the clause that names the file."""
    from apidb import Catalog

    db = tmp_path / "live.db"
    with Catalog(db) as cat:
        cat.sync(live.records)
    assert toolsift("index", db=db).returncode == 0
    query = ("Help me find Mr. Lu Yaojie's resume in the Chinese Information Processing Laboratory of the "
             "Institute of Software and save it to /root/markdown/cv.md.")
    r = toolsift("route", query, "-k", "10", "--json", db=db)
    assert r.returncode == 0, r.stderr
    tools = json.loads(r.stdout)["tools"]
    brought = [t for t in tools if t["reason"] == "part" and t["part"] == "save it to /root/markdown/cv.md"]
    assert brought and {t["name"] for t in brought} == {"write_file"}, tools
    assert all(t["id"] in _writes(live) for t in brought)
