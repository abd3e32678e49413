"""What an audit leaves behind for a colleague: report.md, a verdict chart, and a per-answer file.

report.md opens with the headline and how the mode scores it (strict and Gorilla scoring differ
by tens of points on the same file), any warning about the files, the verdict counts, examples
of each verdict with full values, and the most frequent hallucinated identifiers. Values are
never cut silently: a table cell that must be short ends in "…", and the per-answer file
(answers.jsonl / answers.csv, or ``--answers FILE``) has everything.

Works on any object with the `checker.audit.AuditResult` fields (n, counts, mode, rows,
summary(), examples()), so this module does not import checker.audit.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from .code import record_keys
from .errors import AuditError
from .parse import parse_calls

# Columns of the per-answer CSV, in order (JSONL lines carry the same keys when present).
ANSWER_FIELDS = ("question_id", "verdict", "api", "call", "gold", "nearest", "differs", "why", "answer")
_CELL = 300  # characters of a value in a markdown table cell before "…" (the answers file is whole)


def identifier(call: str | None) -> str:
    """What a hallucinated call names: its identifying values, else its function."""
    if not call:
        return "(no call)"
    calls = parse_calls(call).calls
    keys = record_keys(calls)
    if not keys:
        return " ".join(call.split())
    path, ident = keys[0]
    return ", ".join(v for _, v in ident) if ident else path


def write_answers(rows: list[dict[str, Any]], path: Path) -> Path:
    """One line per answer: JSON Lines, or CSV when ``path`` ends in .csv."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="") as fh:
            if path.suffix.lower() == ".csv":
                writer = csv.DictWriter(fh, fieldnames=ANSWER_FIELDS, extrasaction="ignore")
                writer.writeheader()
                writer.writerows(rows)
            else:
                fh.writelines(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows)
    except OSError as exc:
        raise AuditError(f"{path}: cannot write the answers file ({exc.strerror or exc})") from None
    return path


def _md(text: Any, limit: int = _CELL) -> str:
    text = " ".join(str(text).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.replace("|", "\\|").replace("`", "'")


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.2f}%"


def headline(summary: dict[str, Any]) -> str:
    """One sentence: the figures and what they are fractions of."""
    acc = summary["accuracy"]
    return (f"n = {summary['n']}; accuracy {_pct(acc) if acc is not None else 'n/a (no --gold: only hallucination is measured)'}, "
            f"hallucination {_pct(summary['hallucination'])}, error {_pct(summary['error'])}")


def write_report(result: Any, out_dir: Path, title: str, command: str = "",
                 warnings: list[str] | tuple[str, ...] = ()) -> Path:
    """report.md, verdicts.png (matplotlib, Agg backend), answers.jsonl and answers.csv in ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    chart = _chart(result, out_dir / "verdicts.png", title)
    write_answers(result.rows, out_dir / "answers.jsonl")
    write_answers(result.rows, out_dir / "answers.csv")
    s = result.summary()
    lines = [f"# Audit: {title}", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    lines += [f"Mode: **{result.mode}**. {headline(s)}.", "", f"How it is scored: {s.get('scoring', '')}", ""]
    for w in warnings:
        lines += [f"**Warning:** {w}", ""]
    lines += ["Every answer, with its verdict, call, gold and the model's text: `answers.jsonl`, `answers.csv`.", "",
              "## Verdicts", "", "| verdict | count | share |", "|---|---|---|"]
    for verdict, count in result.counts.most_common():
        lines.append(f"| {verdict} | {count} | {100 * count / max(1, result.n):.2f}% |")
    lines += ["", "## Examples per verdict", "", "| verdict | question | call in the answer | gold | what is wrong |",
              "|---|---|---|---|---|"]
    for verdict, rows in result.examples(3).items():
        for r in rows:
            wrong = r.get("why") or r.get("differs") or ("" if verdict in ("correct", "valid") else "-")
            lines.append(f"| {verdict} | {r.get('question_id')} | `{_md(r.get('call') or '(none)')}` | "
                         f"`{_md(r.get('gold') or '-')}` | {_md(wrong)} |")
    halluc = [r for r in result.rows if r["verdict"] == "hallucinated"]
    by_ident: dict[str, list[dict[str, Any]]] = {}
    for r in halluc:
        by_ident.setdefault(identifier(r.get("call")), []).append(r)
    lines += ["", "## Most frequent hallucinated identifiers", "",
              "| identifier | count | example question | nearest real API / what differs |", "|---|---|---|---|"]
    for ident, rs in sorted(by_ident.items(), key=lambda t: (-len(t[1]), t[0]))[:20]:
        ex = rs[0]
        near = ex.get("differs") or ex.get("nearest") or ""
        lines.append(f"| `{_md(ident)}` | {len(rs)} | {ex.get('question_id')} | {_md(near)} |")
    if chart:
        lines += ["", f"![verdicts]({chart.name})"]
    path = out_dir / "report.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _chart(result: Any, path: Path, title: str) -> Path | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    items = result.counts.most_common()
    if not items:
        return None
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.bar([k for k, _ in items], [v for _, v in items], color="#4c72b0")
    ax.set_ylabel("answers")
    ax.set_title(title if len(title) <= 70 else title[:69] + "…", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
