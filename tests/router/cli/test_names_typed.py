"""Names the user typed are resolved or the nearest is suggested; natural inputs are taken
(issue 40): --pin with a typo, --model that does not exist, an empty tool list, a folder of specs."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support.cli import toolsift

ROOT = Path(__file__).resolve().parents[3]
TOOLS = ROOT / "examples" / "tools.json"


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    db = tmp_path_factory.mktemp("names") / "c.db"
    assert toolsift("catalog", "add", TOOLS, db=db).returncode == 0
    return db


def test_pin_typo_suggests_the_tool(db):
    res = toolsift("route", "weather", "--pin", "get_weathr", "--method", "bm25", db=db)
    assert res.returncode == 2 and "did you mean get_weather" in res.stderr, res.stderr


def test_unknown_model_is_one_error_line_with_the_nearest_name(db):
    res = toolsift("route", "weather", "--model", "nope", db=db)
    assert res.returncode == 2 and "index --model nope" not in res.stderr, res.stderr
    assert res.stderr.startswith("error: unknown embedding model 'nope'") and "toolsift-general-minilm" in res.stderr
    typo = toolsift("index", "--model", "toolsift-general-minlm", db=db)
    assert typo.returncode == 2 and "did you mean toolsift-general-minilm?" in typo.stderr, typo.stderr


def test_an_empty_tool_list_says_it_is_empty(tmp_path):
    empty = tmp_path / "tools.json"
    empty.write_text(json.dumps({"tools": []}), encoding="utf-8")
    res = toolsift("catalog", "add", empty, db=tmp_path / "c.db")
    assert res.returncode == 2 and "not a known catalog format" not in res.stderr
    assert res.stderr.strip() == f"error: {empty}: holds no tools (an empty tool list): nothing to add"


def test_a_folder_of_specs_is_added_file_by_file(tmp_path):
    specs = tmp_path / "specs"
    (specs / "more").mkdir(parents=True)
    shutil.copy(TOOLS, specs / "tools.json")
    shutil.copy(ROOT / "apidb" / "data" / "gorilla" / "torchhub_api.jsonl", specs / "more" / "torchhub_api.jsonl")
    (specs / "README.txt").write_text("not a spec", encoding="utf-8")
    res = toolsift("catalog", "add", specs, db=tmp_path / "c.db")
    assert res.returncode == 0, res.stderr
    stats = json.loads(toolsift("catalog", "stats", db=tmp_path / "c.db").stdout)
    assert json.loads(res.stdout)["added"] == 8 + 94 and stats["records"] == 102
    empty = tmp_path / "nothing"
    empty.mkdir()
    res = toolsift("catalog", "add", empty, db=tmp_path / "c.db")
    assert res.returncode == 2 and "no spec files" in res.stderr and "Is a directory" not in res.stderr
