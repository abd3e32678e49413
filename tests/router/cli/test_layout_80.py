"""What a person reads at an 80-column terminal (issue 40): prose wraps at spaces, never inside a
word; ids are never broken; verdicts are coloured; the audit figures are aligned; `catalog list`
shows id, namespace, name, description and call and filters by text."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.cli import toolsift

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
TORCHHUB = ROOT / "apidb" / "data" / "gorilla" / "torchhub_api.jsonl"
NARROW = {"COLUMNS": "80"}
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _narrow(*args, db=None, env=None):
    return toolsift(*args, db=db, terminal=True, env={**NARROW, **(env or {})})


def _fits(text: str, words: set[str]) -> None:
    """Every line fits 80 columns (but a single word wider than the terminal, kept whole), and each
    word of ``words`` appears whole on some line."""
    lines = text.splitlines()
    assert all(len(ln) <= 80 or len(ln.split()) == 1 for ln in lines), [ln for ln in lines if len(ln) > 80]
    flat = " ".join(ln.strip() for ln in lines).split()
    for w in words:
        assert any(w in token for token in flat), (w, text)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    db = tmp_path_factory.mktemp("layout") / "c.db"
    assert toolsift("catalog", "add", TORCHHUB, EXAMPLES / "tools.json", db=db).returncode == 0
    return db


def test_doctor_wraps_under_its_detail_column(db):
    res = _narrow("doctor", db=db, env={"TOOLSIFT_CACHE": str(db.parent / "a-rather-long-cache-folder-name")})
    _fits(res.stdout, {str(db)})
    # continuation lines start under the detail column, not at the margin
    conts = [ln for ln in res.stdout.splitlines() if ln.startswith(" ")]
    assert conts and all(ln.startswith(" " * 29) for ln in conts), res.stdout


def test_catalog_add_and_check_summary_wrap_at_spaces(tmp_path):
    deep = tmp_path / ("a-folder-with-a-long-name-" * 2) / "tools.json"
    deep.parent.mkdir()
    deep.write_text((EXAMPLES / "tools.json").read_text(encoding="utf-8"), encoding="utf-8")
    db = tmp_path / "c.db"
    res = _narrow("catalog", "add", deep, db=db)
    assert res.returncode == 0, res.stderr
    _fits(res.stdout, {"records", "namespace:"})
    chk = _narrow("check", EXAMPLES / "calls.jsonl", db=db)
    assert chk.returncode == 1
    _fits(chk.stderr, {"enum_violation", "failing"})
    assert "enum_viol\n" not in chk.stderr


def test_tenants_new_key_prose_wraps(tmp_path):
    res = _narrow("tenants", "new-key")
    _fits(res.stderr, {"key_sha256", "[tenants.NAME]"})
    assert re.search(r"^key:\s+tsk_\S+$", res.stdout, re.M)  # the key itself is one whole line


def test_budget_lines_wrap_at_spaces(db):
    res = _narrow("route", "load a densenet model for image classification", "-k", "3", "--token-budget", "60",
                  "--method", "bm25", db=db)
    assert res.returncode == 0, res.stderr
    _fits(res.stdout, {"budget"})
    _fits(res.stderr, set())


def test_cache_info_never_breaks_a_file_or_model_id(tmp_path, db):
    cache = tmp_path / "cache"
    assert toolsift("index", db=db, env={"TOOLSIFT_CACHE": str(cache)}).returncode == 0
    # a second copy under a name as long as a tuned model's (which rich used to crop at 80 columns)
    first = sorted(cache.glob("emb-*.npz"))[0]
    (cache / first.name.replace("emb-", "emb-my-team-tuned-encoder-from-march-", 1)).write_bytes(first.read_bytes())
    res = _narrow("cache", "info", env={"TOOLSIFT_CACHE": str(cache)})
    assert res.returncode == 0, res.stderr
    files = [f["file"] for f in json.loads(toolsift("cache", "info", env={"TOOLSIFT_CACHE": str(cache)}).stdout)["files"]]
    names = {Path(f).name for f in files}
    assert names
    for name in names:
        assert any(ln.strip() == name or ln.strip().startswith(name + " ") or f" {name}" in ln
                   for ln in res.stdout.splitlines()), (name, res.stdout)


def test_check_verdicts_are_coloured_on_a_terminal_only(tmp_path):
    db = tmp_path / "c.db"
    assert toolsift("catalog", "add", EXAMPLES / "tools.json", db=db).returncode == 0
    coloured = _narrow("check", EXAMPLES / "calls.jsonl", db=db, env={"FORCE_COLOR": "1"})
    assert "\x1b[32mvalid" in coloured.stdout and "\x1b[1;31mhallucinated_tool" in coloured.stdout
    plain = _narrow("check", EXAMPLES / "calls.jsonl", db=db, env={"NO_COLOR": "1"})
    assert not ANSI.search(plain.stdout) and "hallucinated_tool" in plain.stdout


def test_audit_figures_are_aligned(db):
    res = _narrow("audit", EXAMPLES / "torchhub_responses.jsonl", "--namespace", "torchhub",
                  "--gold", EXAMPLES / "torchhub_gold.jsonl", "--fail-on", "none", db=db)
    assert res.returncode == 0, res.stderr
    head = res.stdout.splitlines()[:5]
    assert [ln.split()[0] for ln in head] == ["n", "accuracy", "hallucination", "error", "verdicts"]
    assert "\t" not in res.stdout and len({ln.index(ln.split()[1]) for ln in head}) == 1


def test_catalog_list_shows_namespace_name_and_call_and_filters(db):
    res = _narrow("catalog", "list", "densenet", db=db)
    assert res.returncode == 0, res.stderr
    _fits(res.stdout, {"torchhub/Densenet~9582f42b", "model='densenet121',", "model='densenet201',"})
    assert "namespace torchhub" in res.stdout and "name Densenet" in res.stdout
    assert "get_weather" not in res.stdout
    wide = toolsift("catalog", "list", "densenet", db=db, terminal=True, env={"COLUMNS": "220"})
    header = wide.stdout.splitlines()[1].split()
    assert header == ["id", "namespace", "name", "description", "call"], wide.stdout
    piped = json.loads(toolsift("catalog", "list", "WEATHER", db=db).stdout)
    assert [r["id"] for r in piped] == ["tools/get_weather"]


def test_catalog_show_resolves_a_unique_name_and_suggests(db):
    ok = toolsift("catalog", "show", "AlexNet", db=db)
    assert ok.returncode == 0 and json.loads(ok.stdout)["id"] == "torchhub/AlexNet", ok.stderr
    typo = toolsift("catalog", "show", "AlexNt", db=db)
    assert typo.returncode == 2 and "did you mean torchhub/AlexNet?" in typo.stderr
    many = toolsift("catalog", "show", "Densenet", db=db)
    assert many.returncode == 2 and "names 4 records" in many.stderr and "torchhub/Densenet~" in many.stderr
