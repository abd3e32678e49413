"""Audit a file of released model answers (Gorilla response files) against a catalog.

Reads responses as released (``question_id``, ``text``), matches gold answers by
question id (line *i* of an APIBench ``*_eval.json`` is question *i*), and reports
n, accuracy, hallucination and error as fractions; optionally (checker.audit_report) a
markdown report with how the mode scores, the verdict breakdown, examples per verdict, the
most frequent hallucinated identifiers and a chart, and a per-answer JSONL / CSV file.

`gold_mismatch` says when a response file and a gold file cannot belong together (a TorchHub
response file scored against the Hugging Face gold was silently 186 answers against 911 gold
lines, every one of them wrong).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apidb.jsonl import JsonLineError, parse_lines

from .code import CodeIndex
from .errors import AuditError
from .verdict import OK_VERDICTS, Verdict

# What a headline figure means in each mode. Strict and the published Gorilla numbers differ a
# lot on the same file (Hugging Face FT 0-shot: 20.8% vs 69.4%); the report must say why.
SCORING = {
    "strict": ("strict: an answer is correct only if its call is the gold API itself (same function and "
               "identifying arguments, e.g. the same model id); another real API is wrong_api, an API the "
               "catalog does not have is hallucinated. The figures Gorilla published use the upstream "
               "APIBench scorer (--mode gorilla), which credits any catalog API of the gold's domain and "
               "matches ids as substrings, so it reads higher on the same file."),
    "gorilla": ("gorilla: the upstream APIBench AST scorer, as in Gorilla's published tables: an answer is "
                "correct if the first catalog entry it matches (function and key values as substrings) has "
                "the gold's domain, even when it is a different API; --mode strict requires the gold API "
                "itself."),
}


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
    def defective(self) -> int:
        """Answers whose verdict is not correct / valid."""
        return sum(n for v, n in self.counts.items() if v not in OK_VERDICTS)

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
                "error": self.error, "mode": self.mode, "counts": dict(sorted(self.counts.items())),
                "defective": self.defective, "scoring": SCORING.get(self.mode, "")}

    def examples(self, per_verdict: int = 3) -> dict[str, list[dict[str, Any]]]:
        """The first ``per_verdict`` answers of each verdict (in file order)."""
        out: dict[str, list[dict[str, Any]]] = {}
        for row in self.rows:
            bucket = out.setdefault(row["verdict"], [])
            if len(bucket) < per_verdict:
                bucket.append(row)
        return out


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
            if v.defects:
                row["why"] = v.defects[0].message
        if g is not None:
            row["gold"] = g.get("api_call") if isinstance(g, dict) else g
        row["answer"] = text
        rows.append(row)
        if progress is not None:
            progress()
    return AuditResult(n=len(responses), counts=counts, mode=mode, with_gold=gold is not None, rows=rows)


def gold_mismatch(responses: list[dict[str, Any]], gold: dict[int, dict[str, Any]], index: CodeIndex,
                  namespace: str, sample: int = 200) -> tuple[list[str], str | None]:
    """(warnings, error) about a response file and a gold file that may not belong together.

    Warning: the files differ in length, or question ids have no gold line. Error: the gold
    answers are APIs the catalog namespace does not have (fewer than half of a sample of the
    gold calls are in it): the gold file is of another hub, or --namespace is wrong.
    """
    warnings = []
    ids = [r.get("question_id") for r in responses]
    if len(responses) < len(gold):
        warnings.append(f"{len(responses)} responses for {len(gold)} gold answers: {len(gold) - len(responses)} "
                        "gold questions have no response and are not counted")
    elif len(responses) > len(gold):
        warnings.append(f"{len(responses)} responses but only {len(gold)} gold answers: the files may not be of "
                        "the same hub and split")
    missing = sum(1 for q in ids if not isinstance(q, int) or q not in gold)
    if missing:
        warnings.append(f"{missing} response(s) have a question_id with no gold line (counted as no_gold)")
    used = sorted({q for q in ids if isinstance(q, int) and q in gold})[:sample] or sorted(gold)[:sample]
    calls = [gold_for("strict", gold[q]) for q in used]
    calls = [c for c in calls if isinstance(c, str) and c.strip()]
    if not calls:
        return warnings, None
    known = sum(1 for c in calls if any(k in index.by_key for k in index.gold_keys(c)))
    if known * 2 < len(calls):
        return warnings, (f"only {known} of {len(calls)} gold answers checked are APIs of namespace "
                          f"{namespace!r}: the gold file belongs to another hub, or --namespace is wrong")
    return warnings, None


def response_shape(responses: list[dict[str, Any]], path: Path) -> None:
    """A response file is Gorilla's (``question_id``, ``text`` per line). Another kind of file is
    one error that says what it looks like: a tool-calls file scored as responses was "4
    unparsable, question None" with no hint it was the wrong file."""
    if not responses or any("text" in r for r in responses):
        return
    first = responses[0]
    keys = ", ".join(repr(k) for k in list(first)[:5])
    if "calls" in first or "output" in first:
        kind = ("a tool-calls file (JSON calls) for `toolsift check`" if "calls" in first
                else "a model-output file for `toolsift check`")
        raise AuditError(f"{path}: line 1 has {keys}: this looks like {kind}, not a response file "
                         "(audit reads {question_id, text} per line)")
    raise AuditError(f"{path}: no line has 'text': audit reads a Gorilla response file, {{question_id, text}} "
                     f"per line (line 1 has {keys})")


def responses_namespace(responses: list[dict[str, Any]], whole: CodeIndex, namespace: str,
                        sample: int = 200) -> str | None:
    """An error when the answers are APIs of another namespace of the catalog than ``namespace``.

    TorchHub responses audited with ``--namespace huggingface`` were scored "hallucination 1.0"
    with only a length warning; each answer is a real API, of the wrong hub. ``whole`` is the
    code index of the whole catalog: a sample of the answers is matched against it, and when
    more than half of those that match a catalog API match one of another namespace, the files
    do not belong together.
    """
    found: Counter = Counter()
    for resp in responses[:sample]:
        text = resp.get("text")
        if not isinstance(text, str):
            continue
        api = whole.check(text).api
        if api:
            found[api.split("/", 1)[0]] += 1
    matched = sum(found.values())
    if not matched or found[namespace] * 2 >= matched:
        return None
    other, n = max(((ns, c) for ns, c in found.items() if ns != namespace), key=lambda x: x[1])
    return (f"{n} of {matched} answers checked call APIs of namespace {other!r}, {found[namespace]} of "
            f"{namespace!r}: the responses are for another hub (--namespace {other}?)")


# the report and the per-answer files live there; kept importable from here
from .audit_report import identifier, write_answers, write_report  # noqa: E402,F401
