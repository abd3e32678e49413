"""Issue 42: `toolsift route` with a $TOOLSIFT_CACHE that cannot be created (under a file, under
/proc) is one line naming the folder, exit 2; it was a NotADirectoryError traceback."""
from __future__ import annotations

from tests.conftest import BUNDLED_GORILLA
from tests.support.cli import toolsift


def test_an_uncreatable_cache_folder_is_one_line(tmp_path):
    db = tmp_path / "catalog.db"
    assert toolsift("catalog", "add", BUNDLED_GORILLA / "torchhub_api.jsonl", db=db).returncode == 0
    assert toolsift("index", db=db).returncode == 0  # the shipped vectors: nothing to encode
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    for cache in (blocker / "cache", "/proc/toolsift-cache"):
        r = toolsift("route", "detect objects in an image", "--method", "hybrid", db=db,
                     env={"TOOLSIFT_CACHE": str(cache)})
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-1500:]
        assert r.stderr.startswith("error: ") and str(cache) in r.stderr and "TOOLSIFT_CACHE" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
