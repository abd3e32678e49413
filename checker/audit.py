"""Audit a file of released model answers (Gorilla response files) against a catalog.

Reads responses as released (``question_id``, ``text``), matches gold answers by
question id (line *i* of an APIBench ``*_eval.json`` is question *i*), and reports
n, accuracy, hallucination and error as fractions; optionally a markdown report
with the verdict breakdown, the most frequent hallucinated identifiers and a chart.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apidb.jsonl import JsonLineError, parse_lines

from .code import CodeIndex, record_keys
from .errors import AuditError
from .parse import parse_calls
from .verdict import Verdict


def read_jsonl(path: Path, what: str) -> list[dict[str, Any]]:
    """Objects of a JSON Lines file; a bad line is a one-line error naming it."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise AuditError(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    rows = []
    try:
        for lineno, obj in parse_lines(raw.decode("utf-8", errors="replace")):
            if not isinstance(obj, dict):
                raise AuditError(f"{path}: line {lineno}: expected an object, got {type(obj).__name__}")
            rows.append(obj)
    except JsonLineError as exc:
        raise AuditError(f"{path}: line {exc.lineno}: malformed JSON ({exc.msg})") from None
    return rows


def read_gold(path: Path) -> dict[int, dict[str, Any]]:
    """APIBench eval file: question id (1-based line number) -> record."""
    return {i: row for i, row in enumerate(read_jsonl(path, "gold answers"), 1)}


@dataclass
class AuditResult:
    n: int
    counts: Counter
    mode: str
    with_gold: bool
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def accuracy(self) -> float | None:
        return self.counts["correct"] / self.n if self.n and self.with_gold else None

    @property
    def hallucination(self) -> float:
        return self.counts["hallucinated"] / self.n if self.n else 0.0

    @property
    def error(self) -> float | None:
        acc = self.accuracy
        return None if acc is None else max(0.0, 1.0 - acc - self.hallucination)

    def summary(self) -> dict[str, Any]:
        return {"n": self.n, "accuracy": self.accuracy, "hallucination": self.hallucination,
                "error": self.error, "mode": self.mode, "counts": dict(sorted(self.counts.items()))}


def gold_for(mode: str, record: dict[str, Any] | None) -> Any:
    if record is None:
        return None
    return record.get("api_data") if mode == "gorilla" else record.get("api_call")


def audit(responses: list[dict[str, Any]], index: CodeIndex, gold: dict[int, dict[str, Any]] | None = None,
          mode: str = "strict", progress: Any = None) -> AuditResult:
    """Check every response; ``progress`` is called once per response when given."""
    counts: Counter = Counter()
    rows = []
    for i, resp in enumerate(responses):
        qid = resp.get("question_id")
        text = resp.get("text")
        text = text if isinstance(text, str) else ""
        g = gold_for(mode, gold.get(qid)) if gold is not None and isinstance(qid, int) else None
        if gold is not None and g is None:
            verdict = "no_gold"  # question id absent from the gold file: counted as error
            v: Verdict | None = None
        else:
            v = index.check_gorilla(text, g) if mode == "gorilla" else index.check(text, g)
            verdict = v.verdict
        counts[verdict] += 1
        row = {"question_id": qid, "verdict": verdict}
        if v is not None:
            row.update({k: x for k, x in (("api", v.api), ("call", v.call), ("nearest", v.nearest),
                                          ("differs", v.details.get("differs"))) if x})
        rows.append(row)
        if progress is not None:
            progress()
    return AuditResult(n=len(responses), counts=counts, mode=mode, with_gold=gold is not None, rows=rows)


def identifier(call: str | None) -> str:
    """What a hallucinated call names: its identifying values, else its function."""
    if not call:
        return "(no call)"
    calls = parse_calls(call).calls
    keys = record_keys(calls)
    if not keys:
        return call.strip()[:80]
    path, ident = keys[0]
    return ", ".join(v for _, v in ident) if ident else path


def write_report(result: AuditResult, out_dir: Path, title: str, command: str = "") -> Path:
    """report.md plus verdicts.png (matplotlib, Agg backend) in ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    chart = _chart(result, out_dir / "verdicts.png", title)
    s = result.summary()
    fmt = lambda x: "n/a" if x is None else f"{100 * x:.2f}%"  # noqa: E731
    lines = [f"# Audit: {title}", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    lines += [f"Mode: **{result.mode}**. n = {s['n']}; accuracy {fmt(s['accuracy'])}, "
              f"hallucination {fmt(s['hallucination'])}, error {fmt(s['error'])}.", "",
              "## Verdicts", "", "| verdict | count | share |", "|---|---|---|"]
    for verdict, count in result.counts.most_common():
        lines.append(f"| {verdict} | {count} | {100 * count / max(1, result.n):.2f}% |")
    halluc = [r for r in result.rows if r["verdict"] == "hallucinated"]
    by_ident: dict[str, list[dict[str, Any]]] = {}
    for r in halluc:
        by_ident.setdefault(identifier(r.get("call")), []).append(r)
    lines += ["", "## Most frequent hallucinated identifiers", "",
              "| identifier | count | example question | nearest real API / what differs |", "|---|---|---|---|"]
    for ident, rs in sorted(by_ident.items(), key=lambda t: (-len(t[1]), t[0]))[:20]:
        ex = rs[0]
        near = ex.get("differs") or ex.get("nearest") or ""
        lines.append(f"| `{_md(ident)}` | {len(rs)} | {ex.get('question_id')} | {_md(near)[:160]} |")
    if chart:
        lines += ["", f"![verdicts]({chart.name})"]
    path = out_dir / "report.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _md(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").replace("`", "'")


def _chart(result: AuditResult, path: Path, title: str) -> Path | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    items = result.counts.most_common()
    if not items:
        return None
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.bar([k for k, _ in items], [v for _, v in items], color="#4c72b0")
    ax.set_ylabel("answers")
    ax.set_title(title[:70], fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
