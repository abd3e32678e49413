"""Time the official BFCL AST checker on the outputs of ``bfcl_official/dev.jsonl.gz``.

    REFERENCE_PYTHON benchmarks/checker/bfcl_reference.py DATA_ROOT [--fc] [--sample N]

Run by ``toolsift bench bfcl --reference-python PATH`` with an interpreter that has
``bfcl-eval`` installed (benchmarks/README.md says how, without its ~6 GB of model
handler dependencies). This file is standalone on purpose: it imports only the standard
library and bfcl_eval, never toolsift, so it runs in that interpreter's environment.

One process checks every output once, as BFCL's eval runner does after decoding: the
format test (``is_function_calling_format_output``) then ``ast_checker(function docs,
decoded output, possible answer, language, category, model name)``. The outputs are
copied before the timed pass (the checker may touch what it is given); loading is not
timed. It prints one JSON object: CPU seconds of the pass, tool calls, outputs, how many
verdicts equal the stored official ones (a check that it was called as the labels were
made), and the load average around the pass.
"""
from __future__ import annotations

import argparse
import copy
import gc
import gzip
import json
import os
import re
import sys
import time
from pathlib import Path

PROMPT_MODEL, FC_MODEL = "gpt-4o-2024-11-20", "gpt-4o-2024-11-20-FC"  # the models the labels were made for
_FILE = re.compile(r"BFCL_v\d+_(.+)\.json$")


def _jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def load(root: Path, sample: int) -> tuple[list[dict], dict[str, tuple[list, list]]]:
    """The labelled outputs (about ``sample`` of them, evenly spaced, as benchmarks/checker/bfcl_speed.py
    takes them; 0: all) and, per question id, (function docs, possible answer)."""
    with gzip.open(root / "bfcl_official" / "dev.jsonl.gz", "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    if sample:
        rows = rows[::max(1, len(rows) // sample)]
    wanted = {r["id"] for r in rows}
    questions: dict[str, tuple[list, list]] = {}
    bfcl = root / "bfcl"
    for answers in sorted((bfcl / "possible_answer").glob("BFCL_v*_*.json")):
        docs = {q["id"]: q["function"] for q in _jsonl(bfcl / answers.name) if q["id"] in wanted}
        for a in _jsonl(answers):
            if a["id"] in docs:
                questions[a["id"]] = (docs[a["id"]], a["ground_truth"])
    return rows, questions


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data_root", type=Path)
    parser.add_argument("--fc", action="store_true", help="judge as the function-calling model")
    parser.add_argument("--sample", type=int, default=0, help="about N outputs, evenly spaced (0: all)")
    args = parser.parse_args(argv)

    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker
    from bfcl_eval.utils import is_function_calling_format_output

    rows, questions = load(args.data_root, args.sample)
    languages = {"simple_java": Language.JAVA, "simple_javascript": Language.JAVASCRIPT}
    model, label = (FC_MODEL, "official_valid_fc") if args.fc else (PROMPT_MODEL, "official_valid")
    work = [(questions[r["id"]][0], copy.deepcopy(r["calls"]), questions[r["id"]][1],
             languages.get(r["category"], Language.PYTHON), r["category"]) for r in rows]
    gc.collect()
    gc.freeze()  # the loaded data is not the checker's work (toolsift's passes do the same)
    load_start = os.getloadavg()
    start = time.process_time()
    verdicts = []
    for docs, calls, answer, language, category in work:
        if not is_function_calling_format_output(calls):
            verdicts.append(False)
            continue
        verdicts.append(ast_checker(docs, calls, answer, language, category, model)["valid"])
    cpu = time.process_time() - start
    load_end = os.getloadavg()
    agree = sum(v == r[label] for v, r in zip(verdicts, rows))
    print(json.dumps({"cold_cpu_seconds": cpu, "outputs": len(rows), "tool_calls": sum(len(r["calls"]) for r in rows),
                      "agree": agree, "model": model, "python": sys.version.split()[0],
                      "load_average_start": [round(x, 2) for x in load_start],
                      "load_average_end": [round(x, 2) for x in load_end]}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
