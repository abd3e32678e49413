"""Speed work must not move a ranking: the top 10 (ids, scores, explanations) of real requests,
short questions and agent-length several-sentence requests, against what the router answered
before the latency work of issue 39 (data/same_rankings.json).

The catalog is real: the bundled Gorilla APIs (1,069, their vectors shipped) and the StableToolBench
G2 endpoints of five categories (tests/router/conftest.py). The requests are the first StableToolBench
G2 requests of 40-60 words and the first APIBench TorchHub questions of at most 15 words.

The file is written by the code it checks, never by hand:
``python -m tests.router.ranking.test_same_rankings write`` (only when a ranking change is meant;
the commit then says why).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).with_name("data") / "same_rankings.json"
LONG, SHORT = 12, 12


def requests() -> dict[str, list[str]]:
    from benchmarks.data.datasets import available, load_dataset

    for name in ("stabletoolbench_G2_instruction", "apibench_torchhub"):
        if not available(name):
            pytest.skip(f"real data not available: dataset {name}")
    stb = [q.text for q in load_dataset("stabletoolbench_G2_instruction").queries]
    hub = [q.text for q in load_dataset("apibench_torchhub").queries]
    return {"agent": [t for t in stb if 40 <= len(t.split()) <= 60][:LONG],
            "short": [t for t in hub if len(t.split()) <= 15][:SHORT]}


def answers(router, texts: list[str]) -> list[dict]:
    """What a caller sees of each request: fixed k=10 and the default adaptive k."""
    def rows(sel):
        return [{"id": s.record.id, "score": round(float(s.score), 6), "bm25": round(float(s.bm25_score), 5),
                 "dense": None if s.dense_score is None else round(float(s.dense_score), 5),
                 "reason": s.reason, "fields": s.matched_fields} for s in sel]

    out = []
    for t in texts:
        top10, adaptive = router.select(t, k=10), router.select(t)
        out.append({"request": t, "top10": rows(top10), "adaptive": [s.record.id for s in adaptive],
                    "parts": top10.parts})
    return out


def _router(records, cache_dir):
    from router import Router

    r = Router.from_records(records, cache_dir=cache_dir)
    r.dense_index()
    return r


@pytest.fixture(scope="module")
def catalog_router(gorilla_records, stb_records, emb_cache):
    return _router(gorilla_records + stb_records, emb_cache)


@pytest.mark.parametrize("kind", ["agent", "short"])
def test_rankings_are_the_ones_before_the_speed_work(catalog_router, kind):
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))[kind]
    texts = requests()[kind]
    assert [g["request"] for g in golden] == texts, "the sample of requests changed: rewrite the file"
    now = answers(catalog_router, texts)
    for before, after in zip(golden, now):
        assert [r["id"] for r in after["top10"]] == [r["id"] for r in before["top10"]], before["request"]
        # scores to 1e-5 (the cosines are float32 sums), explanations exactly
        for b, a in zip(before["top10"], after["top10"]):
            assert a["reason"] == b["reason"] and a["fields"] == b["fields"], (before["request"], b["id"])
            assert abs(a["score"] - b["score"]) <= 1e-5 and abs(a["bm25"] - b["bm25"]) <= 1e-4
            assert (a["dense"] is None) == (b["dense"] is None)
            assert a["dense"] is None or abs(a["dense"] - b["dense"]) <= 1e-5
        assert after["adaptive"] == before["adaptive"] and after["parts"] == before["parts"]


def write() -> None:
    import tempfile

    from apidb.loaders import load
    from tests.conftest import BUNDLED_GORILLA
    from tests.router.conftest import STB_CATEGORIES
    from tests.conftest import shared

    gorilla = [r for f in sorted(BUNDLED_GORILLA.glob("*_api.jsonl")) for r in load(f).records]
    path = shared("stabletoolbench_solvable", "test_instruction", "G2_instruction.json")
    stb = [r for r in load(path, format="toolbench").records if r.metadata.get("category_name") in STB_CATEGORIES]
    with tempfile.TemporaryDirectory() as tmp:
        router = _router(gorilla + stb, tmp)
        out = {kind: answers(router, texts) for kind, texts in requests().items()}
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}: {', '.join(f'{len(v)} {k}' for k, v in out.items())} requests")


if __name__ == "__main__":
    if sys.argv[1:] != ["write"]:
        sys.exit("usage: python -m tests.router.ranking.test_same_rankings write")
    write()
