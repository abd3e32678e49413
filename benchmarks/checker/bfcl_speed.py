"""The JSON checker's speed on the officially labelled BFCL outputs, beside the official checker's.

Tool calls per CPU-second (``time.process_time``) over the outputs of
``bfcl_official/dev.jsonl.gz``, each question's docs and possible answer shared by its
outputs as in an evaluation run. What the figures mean:

* **cold** (the headline): a fresh process loads the outputs (not timed) and checks every
  one once, compiling each question on first use. That is how the official checker's
  figure was measured (one process, each output checked once), and it is what an
  evaluation run costs.
* **warm**: the same process checks them all a second time, every question already
  compiled: what a long-running proxy or repeated evaluation of the same questions gets.

Each variant runs in ``passes`` fresh processes (``python -m benchmarks.checker.bfcl_speed``),
taken in turn with the others (strict, strict with every message and suggestion read,
bfcl, bfcl --bfcl-fc and, given ``--reference-python``, the official checker for each
model type: benchmarks/checker/bfcl_reference.py run by that interpreter), so that a change in
the machine's load touches every variant alike. Reported: the median and the best pass
(other processes only ever add time), the ratio of medians to the reference measured in
this run, and the load average before and after. Loaded data is frozen out of the garbage
collector's sight (``gc.freeze``) in every process, the reference's too, so that the
figure is the checker's work and not the harness's heap, and in both the outputs' calls are
deep-copied just before the timed passes.
"""
from __future__ import annotations

import copy
import gc
import gzip
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import BenchmarkError, DatasetError

REFERENCE_CALLS_PER_CPU_S = 112_000  # official BFCL checker as issue 16 measured it (42,480 outputs)
BEFORE_CALLS_PER_CPU_S = 21_600      # toolsift strict before issue 16, same measurement
QUICK_OUTPUTS = 2000
# fresh processes per variant: a single pass's CPU time moves by up to ±25 % on this shared
# 2-core machine (0.21-0.30 s for the same strict pass in one run); a 5-pass run had bfcl
# --bfcl-fc at 0.98x the official checker, two 11-pass runs of the same code 1.35x and 1.11x
SPEED_PASSES = 11
OURS = {"strict": "strict", "strict_read_all": "strict, every message and suggestion read",
        "bfcl": "bfcl", "bfcl_fc": "bfcl --bfcl-fc"}
REFERENCE = {"reference": "official checker (prompting model)", "reference_fc": "official checker (FC model)"}
# which reference run each of our variants is compared with
COMPARED = {"strict": "reference", "strict_read_all": "reference", "bfcl": "reference", "bfcl_fc": "reference_fc"}


def sample_step(n: int, quick: bool) -> int:
    """Every how many outputs one is taken (1: all of them)."""
    return max(1, n // QUICK_OUTPUTS) if quick else 1


def load(root: Path, quick: bool) -> tuple[list[dict[str, Any]], dict[str, tuple[Any, Any]]]:
    """The labelled outputs and, per question id, its (function docs, possible answer)."""
    from checker.bfcl.data import BfclData

    path = root / "bfcl_official" / "dev.jsonl.gz"
    if not path.exists():
        raise DatasetError(f"{path}: official BFCL verdicts not found (set TOOLSIFT_SHARED_DATA)")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    rows = rows[::sample_step(len(rows), quick)]
    data = BfclData(root / "bfcl")
    questions = {}
    for r in rows:
        if r["id"] not in questions:
            _, functions, truth = data.lookup(r["id"])
            questions[r["id"]] = (functions, truth)
    return rows, questions


def checker_for(mode: str) -> Any:
    """``check(row, (functions, ground_truth))`` as the mode's users call it."""
    from checker import check_calls

    if mode.startswith("strict"):
        return lambda r, q: check_calls(r["calls"], q[0], q[1])
    fc = mode == "bfcl_fc"
    return lambda r, q: check_calls(r["calls"], q[0], q[1], mode="bfcl", category=r["category"], fc=fc)


def _read_everything(v: Any) -> None:
    for d in v.defects:
        d.message, d.suggestions  # noqa: B018  (messages and suggestions are written on first read)
    v.suggestions  # noqa: B018


def one_process(variant: str, root: Path, quick: bool) -> dict[str, Any]:
    """Load, then time a cold pass and a warm pass over every output (run in a fresh process)."""
    rows, questions = load(root, quick)
    check = checker_for(variant)
    # each output's calls copied just before the passes, as benchmarks/checker/bfcl_reference.py does for
    # the official checker: both checkers then read outputs laid out alike in memory (decoded
    # just before checking, as in an evaluation run), not ones scattered among the loaded data
    work = [(dict(r, calls=copy.deepcopy(r["calls"])), questions[r["id"]]) for r in rows]
    gc.collect()
    gc.freeze()
    load_start = os.getloadavg()
    seconds = []
    for _ in ("cold", "warm"):
        start = time.process_time()
        if variant == "strict_read_all":
            for r, q in work:
                _read_everything(check(r, q))
        else:
            for r, q in work:
                check(r, q)
        seconds.append(time.process_time() - start)
    return {"cold_cpu_seconds": seconds[0], "warm_cpu_seconds": seconds[1], "outputs": len(rows),
            "tool_calls": sum(len(r["calls"]) for r in rows), "load_average_start": list(load_start),
            "load_average_end": list(os.getloadavg())}


def _run(command: list[str], what: str) -> dict[str, Any]:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise BenchmarkError(f"{what} failed (exit {done.returncode}): {tail}")
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise BenchmarkError(f"{what} printed no result: {done.stdout[-200:]!r}") from None


def _command(variant: str, root: Path, quick: bool, reference_python: Path | None) -> list[str]:
    if variant in REFERENCE:
        script = Path(__file__).with_name("bfcl_reference.py")
        return [str(reference_python), str(script), str(root), "--sample", str(QUICK_OUTPUTS if quick else 0)] + \
            (["--fc"] if variant == "reference_fc" else [])
    return [sys.executable, "-m", "benchmarks.checker.bfcl_speed", variant, str(root)] + (["--quick"] if quick else [])


def check_reference(reference_python: Path) -> None:
    """A clear error now, rather than after the other passes, if the interpreter cannot run it."""
    if not Path(reference_python).exists():
        raise BenchmarkError(f"--reference-python {reference_python}: no such interpreter")
    probe = "import bfcl_eval.eval_checker.ast_eval.ast_checker"
    done = subprocess.run([str(reference_python), "-c", probe], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise BenchmarkError(f"--reference-python {reference_python}: cannot import bfcl-eval's AST checker "
                             f"({tail}); benchmarks/README.md says how to install it")


def speed(root: Path, quick: bool, passes: int, reference_python: Path | None = None,
          progress: Any = None) -> dict[str, Any]:
    """Every variant in ``passes`` fresh processes, in turn; figures per variant (see the module doc)."""
    variants = list(OURS) + (list(REFERENCE) if reference_python else [])
    if reference_python:
        check_reference(reference_python)
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    load_start = [round(x, 2) for x in os.getloadavg()]
    for p in range(passes):
        for v in variants:
            runs[v].append(_run(_command(v, root, quick, reference_python), f"speed pass {p + 1} of {v}"))
            if progress:
                progress()
    out: dict[str, Any] = {"passes": passes, "load_average_start": load_start, "variants": {}}
    for v, results in runs.items():
        calls = results[0]["tool_calls"]
        cold = [r["cold_cpu_seconds"] for r in results]
        entry = {"cold_calls_per_cpu_s": round(calls / statistics.median(cold)),
                 "cold_best_calls_per_cpu_s": round(calls / min(cold)), "cold_cpu_seconds": [round(s, 4) for s in cold]}
        if v in OURS:
            warm = [r["warm_cpu_seconds"] for r in results]
            entry.update({"warm_calls_per_cpu_s": round(calls / statistics.median(warm)),
                          "warm_best_calls_per_cpu_s": round(calls / min(warm)),
                          "warm_cpu_seconds": [round(s, 4) for s in warm]})
        else:
            entry["agree"], entry["python"] = results[0]["agree"], results[0]["python"]
        out["variants"][v] = entry
        out["outputs"], out["tool_calls"] = results[0]["outputs"], calls
    for v in OURS:
        ref = out["variants"].get(COMPARED[v])
        if ref:
            out["variants"][v]["cold_vs_reference"] = round(
                out["variants"][v]["cold_calls_per_cpu_s"] / ref["cold_calls_per_cpu_s"], 2)
    out["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    out["cpus"] = os.cpu_count()
    return out


def render(sp: dict[str, Any]) -> list[str]:
    """The report's speed section."""
    from benchmarks.report import md_table

    v = sp["variants"]
    measured = "reference" in v
    parts = ["## Speed", "",
             f"Tool calls per CPU-second over {sp['outputs']} outputs ({sp['tool_calls']} tool calls). **Cold**: a fresh "
             "process checks every output once, compiling each question on first use — how the official checker's "
             "figure is measured, and what an evaluation run costs. **Warm**: the same process checks them all again, "
             f"every question compiled. Median (best) of {sp['passes']} fresh processes per variant, the variants taken "
             "in turn. Figures issue 16 measured on another day: the official checker "
             f"{REFERENCE_CALLS_PER_CPU_S:,}, toolsift before {BEFORE_CALLS_PER_CPU_S:,}.", ""]
    head = ["mode", "cold (best)", "warm (best)"] + (["official checker, this run", "cold vs official"]
                                                     if measured else []) + ["issue 16: official", "toolsift before"]
    rows = []
    for k, label in OURS.items():
        e = v[k]
        row = [label, f"{e['cold_calls_per_cpu_s']:,} ({e['cold_best_calls_per_cpu_s']:,})",
               f"{e['warm_calls_per_cpu_s']:,} ({e['warm_best_calls_per_cpu_s']:,})"]
        if measured:
            ref = v[COMPARED[k]]
            row += [f"{ref['cold_calls_per_cpu_s']:,} ({ref['cold_best_calls_per_cpu_s']:,})",
                    f"**{e['cold_vs_reference']:.2f}×**"]
        rows.append(row + [f"{REFERENCE_CALLS_PER_CPU_S:,}", f"{BEFORE_CALLS_PER_CPU_S:,}"])
    parts += [md_table(head, rows), ""]
    if measured:
        parts += [f"The official checker: bfcl-eval's `ast_checker` after its format test, as its eval runner calls "
                  f"them, run by `--reference-python` (Python {v['reference']['python']}); its verdicts equal the "
                  f"stored official ones on {v['reference']['agree']} of {sp['outputs']} outputs (prompting model) "
                  f"and {v['reference_fc']['agree']} (FC model). The `strict` and `bfcl` rows are compared with the "
                  "prompting-model run, `bfcl --bfcl-fc` with the FC-model run.", ""]
    else:
        parts += ["The official checker was not run (`--reference-python` not given): compare with the issue's "
                  "figure, measured on another day, with care.", ""]
    parts += [f"Load average (1/5/15 min) before {sp['load_average_start']}, after {sp['load_average_end']} on "
              f"{sp['cpus']} CPUs; other processes shared them. Strict mode writes a failed check's defects, messages "
              "and spelling suggestions when they are first read; the second row reads all of them.", ""]
    return parts


def summary(sp: dict[str, Any]) -> str:
    """One line per variant: cold and warm tool calls per CPU-second (medians), and the reference's."""
    v = sp["variants"]
    lines = []
    for k, label in {**OURS, **REFERENCE}.items():
        if k in v:
            e = v[k]
            line = f"{label}: {e['cold_calls_per_cpu_s']:,} tool calls per CPU-second cold"
            if "warm_calls_per_cpu_s" in e:
                line += f", {e['warm_calls_per_cpu_s']:,} warm"
            if "cold_vs_reference" in e:
                line += f" ({e['cold_vs_reference']:.2f}x the official checker, cold)"
            lines.append(line)
    lines.append(f"load average {sp['load_average_start']} -> {sp['load_average_end']} on {sp['cpus']} CPUs")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """``python -m benchmarks.checker.bfcl_speed VARIANT DATA_ROOT [--quick]``: one process's passes, as JSON."""
    if len(argv) < 2 or argv[0] not in OURS:
        print(f"usage: python -m benchmarks.checker.bfcl_speed {{{','.join(OURS)}}} DATA_ROOT [--quick]", file=sys.stderr)
        return 2
    print(json.dumps(one_process(argv[0], Path(argv[1]), "--quick" in argv[2:])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
