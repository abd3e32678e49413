"""`toolsift bench language`: how router.ranking.language tells a request's language, on the
benchmark sets' real queries.

Every set but BFCL live is English: a query it flags is a false alarm (a warning an English user
would see). BFCL live holds real users' requests, some of them in Korean, Chinese, Vietnamese,
Indonesian or Hindi: a request whose letters are mostly of a non-Latin script is non-English
beyond doubt, which gives a floor for what should be flagged; every flagged query is listed so
the rest can be read. The table gives each probability threshold, so the shipped one
(router.ranking.language.THRESHOLD) is chosen from it.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from ..data.datasets import DATASETS, available, load_dataset
from ..report import md_table

THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9)
QUICK = ("apibench_torchhub", "restbench_tmdb", "bfcl_live_multiple")


def non_latin(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    return bool(letters) and sum(ord(c) > 0x24F for c in letters) / len(letters) > 0.3


def run(out: Path, quick: bool = False) -> dict[str, Any]:
    from router.ranking import language

    names = [n for n in (QUICK if quick else DATASETS) if available(n)]
    rows, flagged_live = [], []
    model_seconds = 0.0
    for name in names:
        queries = [q.text for q in load_dataset(name).queries]
        start = time.perf_counter()
        scored = [(q, language.needs_model(q)) for q in queries]
        told = [(q, language._identifier().classify(language.request_text(q)) if need else ("en", 1.0))
                for q, need in scored]
        model_seconds += time.perf_counter() - start
        row: dict[str, Any] = {"set": name, "queries": len(queries),
                               "needs_model": sum(need for _, need in scored),
                               "non_latin": sum(non_latin(q) for q in queries)}
        for t in THRESHOLDS:
            hits = [q for q, (code, p) in told if code != "en" and p >= t]
            row[f"flagged@{t}"] = len(hits)
            row[f"non_latin_flagged@{t}"] = sum(non_latin(q) for q in hits)
        rows.append(row)
        if name == "bfcl_live_multiple":
            flagged_live = [{"query": q[:120], "language": code, "probability": round(p, 3)}
                            for q, (code, p) in told if code != "en" and p >= min(THRESHOLDS)]
    res = {"rows": rows, "thresholds": list(THRESHOLDS), "shipped_threshold": language.THRESHOLD,
           "languages": list(language.LANGUAGES), "bfcl_live_flagged": flagged_live,
           "seconds": round(model_seconds, 2), "quick": quick,
           "load_average": dict(zip(("1m", "5m", "15m"), os.getloadavg())),
           "command": "toolsift bench language" + (" --quick" if quick else "")}
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(res, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "report.md").write_text(report(res), encoding="utf-8")
    return res


def summary(res: dict[str, Any]) -> str:
    t = res["shipped_threshold"]
    english = [r for r in res["rows"] if r["set"] != "bfcl_live_multiple"]
    false = sum(r[f"flagged@{t}"] for r in english)
    n = sum(r["queries"] for r in english)
    live = next((r for r in res["rows"] if r["set"] == "bfcl_live_multiple"), None)
    tail = (f"; BFCL live: {live[f'flagged@{t}']} flagged, {live[f'non_latin_flagged@{t}']} of "
            f"{live['non_latin']} non-Latin-script requests") if live else ""
    return f"at {t}: {false} of {n:,} English queries flagged{tail}"


def report(res: dict[str, Any]) -> str:
    t = res["thresholds"]
    head = ["set", "queries", "model needed"] + [f"flagged ≥{x}" for x in t] + ["non-Latin script (caught at shipped)"]
    shipped = res["shipped_threshold"]
    body = [[r["set"], r["queries"], r["needs_model"]] + [r[f"flagged@{x}"] for x in t]
            + [f"{r['non_latin']} ({r[f'non_latin_flagged@{shipped}']})"] for r in res["rows"]]
    live = res["bfcl_live_flagged"]
    lines = ["# Request language (`toolsift bench language`)", "",
             "Queries of every benchmark set told by router.ranking.language (py3langid restricted to "
             f"{len(res['languages'])} languages; quoted passages left out). Every set but bfcl_live_multiple is "
             "English, so what it flags is a false alarm. `model needed`: queries not taken as English by the "
             f"ASCII + English-word shortcut. Shipped threshold: {shipped}.", "",
             md_table(head, body), "",
             f"Summary: {summary(res)}. Run: `{res['command']}` in {res['seconds']} s, load average "
             f"{res['load_average']['1m']:.2f}.", ""]
    if live:
        lines += ["## BFCL live requests flagged at the lowest threshold", "",
                  md_table(["language", "p", "request"], [[x["language"], x["probability"],
                                                           x["query"].replace("|", "\\|").replace("\n", " ")]
                                                          for x in live]), ""]
    return "\n".join(lines)
