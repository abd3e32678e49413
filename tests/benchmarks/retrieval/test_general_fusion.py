"""The general encoder's fusion-weight question (benchmarks/retrieval/general_fusion.py): a weight is chosen on
one half of the queries and judged on the other, so a choice that only fits the half it was
chosen on does not replace the router's weights."""
from __future__ import annotations

from benchmarks.retrieval.general_fusion import DENSE_GRID, HALVES, choose, report_lines, summary
from benchmarks.retrieval.general_training import FAMILIES


def _rows(gain: dict[tuple[str, float], float]) -> list[dict]:
    """Every dataset and half at every weight: 0.5 everywhere, plus ``gain[(half, weight)]``."""
    return [{"dataset": n, "half": h, "dense_weight": wd, "queries": 10,
             "ndcg@5": 0.5 + gain.get((h, wd), 0.0), "recall@5": 0.5 + gain.get((h, wd), 0.0)}
            for names in FAMILIES.values() for n in names for h in HALVES for wd in DENSE_GRID]


def test_a_weight_that_wins_only_where_it_was_chosen_is_not_taken():
    rows = _rows({("dev", 0.8): 0.05, ("test", 0.8): -0.08})
    assert choose(rows, "dev") == 0.8 and choose(rows, "test") == 0.6
    s = summary(rows)
    assert s["nested"]["objective"] < s["fixed"][0.6]["objective"] and s["keep_default"]
    assert "The router keeps (0.4, 0.6)" in "\n".join(report_lines(rows))


def test_a_weight_that_wins_on_both_halves_is_reported_as_better():
    rows = _rows({("dev", 0.7): 0.03, ("test", 0.7): 0.02})
    s = summary(rows)
    assert s["chosen_on"] == {"dev": 0.7, "test": 0.7} and not s["keep_default"]
    assert abs(s["nested"]["objective"] - 0.525) < 1e-9


def test_a_gain_within_the_margin_keeps_the_default():
    rows = _rows({("dev", 0.75): 0.0005, ("test", 0.75): 0.0005})
    assert choose(rows, "dev") == choose(rows, "test") == 0.6
    assert summary(rows)["keep_default"]


def test_the_depth_stage_is_chosen_and_reported_apart_from_the_weights():
    """Depth rows (stage "depth") are judged on their own grid, nested like the weights; the
    weight rows beside them do not enter that choice."""
    from benchmarks.retrieval.general_fusion import DEPTH_GRID

    depth = [{"dataset": n, "half": h, "stage": "depth", "depth": dp, "dense_weight": 0.6, "queries": 10,
              "ndcg@5": 0.5 + (0.02 if dp == 50 else 0.0), "recall@5": 0.5 + (0.02 if dp == 50 else 0.0)}
             for names in FAMILIES.values() for n in names for h in HALVES for dp in DEPTH_GRID]
    rows = depth + _rows({("dev", 0.8): 0.05, ("test", 0.8): -0.08})
    s = summary(rows, "depth")
    assert s["chosen_on"] == {"dev": 50, "test": 50} and not s["keep_default"]
    assert summary(rows)["chosen_on"] == {"dev": 0.8, "test": 0.6}  # the weight stage alone
    text = "\n".join(report_lines(rows))
    assert "chosen on `dev` 50, on `test` 50" in text and "ships with depth 50 (the nested choice beats 100)" in text
    assert "The router keeps (0.4, 0.6)" in text
