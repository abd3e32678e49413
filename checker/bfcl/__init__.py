"""``mode="bfcl"``: the Berkeley Function-Calling Leaderboard's own AST-checker rules.

    from checker import check_calls
    v = check_calls([{"math.factorial": {"number": 5}}], docs, possible_answer,
                    mode="bfcl", category="simple_python", fc=False)
    v.ok, v.details["bfcl_error_type"]

Reproduces the verdicts of bfcl-eval's ``ast_checker`` (its string normalisation,
its type leniencies, its per-category checkers, its dotted-name rule for
function-calling vs prompting models, its Java/JavaScript source-string decoding)
so that a score computed here is the leaderboard's score; ``toolsift bench bfcl``
measures the agreement on officially labelled outputs. Verdict names are
toolsift's (``correct``, ``wrong_call``, ``type_error``...); BFCL's own error type is
``details["bfcl_error_type"]``. Where BFCL's rules differ from strict mode and why:
docs/checker.md.
"""
from __future__ import annotations

import json
from typing import Any

from ..memo import Memo
from ..verdict import Defect, Verdict, lazy_defect, make, quick_defect, quick_verdict
from .errors import BfclInputError
from .functions import Question

# BFCL v4 AST categories (v3 names too) -> the language BFCL evaluates them in.
CATEGORIES: dict[str, str] = {
    "simple_python": "python", "simple_java": "java", "simple_javascript": "javascript",
    "multiple": "python", "parallel": "python", "parallel_multiple": "python",
    "live_simple": "python", "live_multiple": "python", "live_parallel": "python",
    "live_parallel_multiple": "python", "simple": "python", "java": "java", "javascript": "javascript",
}
LANGUAGES = ("python", "java", "javascript")
DECODER_FORMAT = "ast_decoder:decoder_wrong_output_format"

# BFCL error type -> toolsift verdict (the two name-dependent ones are refined below)
_KIND = {
    "simple_function_checker:missing_required": "missing_required",
    "simple_function_checker:unexpected_param": "hallucinated_param",
    "type_error:simple": "type_error", "type_error:nested": "type_error", "type_error:java": "type_error",
    "type_error:js": "type_error", "toolsift:reference_crash": "type_error",
    "simple_function_checker:wrong_func_name": "hallucinated_tool", DECODER_FORMAT: "unparsable",
}
QUESTIONS: Memo[Question] = Memo(4096)
_RESOLVED: dict[Any, tuple[str, str]] = {}  # category or (category, language) -> resolved


def resolve(category: str | None, language: str | None, question_id: Any = None,
            functions: Any = None, ground_truth: Any = None) -> tuple[str, str]:
    """(category, language), checked; a missing category comes from a BFCL question id
    (``live_simple_3-2-0`` -> ``live_simple``) or else from the answer's shape."""
    if category is None:
        prefix = question_id.rsplit("_", 1)[0] if isinstance(question_id, str) else None
        if prefix in CATEGORIES:
            category = prefix
        elif isinstance(ground_truth, list) and len(ground_truth) > 1:
            category = "parallel"
        else:
            category = "multiple" if isinstance(functions, list) and len(functions) > 1 else "simple"
    if not isinstance(category, str) or category not in CATEGORIES:
        raise BfclInputError(f"unknown BFCL category {category!r} (choose from: {', '.join(CATEGORIES)})")
    if language is None:
        language = CATEGORIES[category]
    if not isinstance(language, str) or language.lower() not in LANGUAGES:
        raise BfclInputError(f"unknown language {language!r} (choose from: {', '.join(LANGUAGES)})")
    return category, language.lower()


def read_calls(calls: Any) -> list[tuple[str, dict[str, Any]]]:
    """Model calls as (name, arguments): BFCL's decoded ``[{name: {param: value}}]`` or
    OpenAI's ``{"name", "arguments"}`` (also inside ``{"function": ...}`` or an assistant
    message's ``tool_calls``). Anything else raises, naming the call."""
    if type(calls) is not list:
        calls = _as_list(calls)
    out: list[tuple[str, dict[str, Any]]] = []
    for item in calls:
        if type(item) is dict and len(item) == 1:
            (name, args), = item.items()
            if type(args) is dict and (name != "function" or "name" not in args):
                out.append((name, args))  # BFCL's decoded form, the common case
                continue
        out.append(_openai_call(item, len(out)))
    return out


def _as_list(calls: Any) -> list[Any]:
    if isinstance(calls, (bytes, bytearray)):
        calls = bytes(calls).decode("utf-8", errors="replace")
    if isinstance(calls, str):
        try:
            calls = json.loads(calls)
        except json.JSONDecodeError as exc:
            raise BfclInputError(f"calls: not JSON ({exc.msg} at column {exc.colno})") from None
    if isinstance(calls, dict):
        calls = calls["tool_calls"] if isinstance(calls.get("tool_calls"), list) else [calls]
    if not isinstance(calls, list):
        raise BfclInputError(f"calls: expected a list of calls, got {type(calls).__name__}")
    return calls


def _openai_call(item: Any, i: int) -> tuple[str, dict[str, Any]]:
    where = f"calls[{i}]"
    if not isinstance(item, dict):
        raise BfclInputError(f"{where}: a call must be an object, got {type(item).__name__}")
    if isinstance(item.get("function"), dict):
        item = item["function"]
    if not isinstance(item.get("name"), str) or not item["name"]:
        raise BfclInputError(f"{where}: expected {{name: {{param: value}}}} or {{\"name\": ..., "
                             "\"arguments\": {...}}")
    args = item.get("arguments", item.get("parameters"))
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as exc:
            raise BfclInputError(f"{where}.arguments: not JSON ({exc.msg} at column {exc.colno})") from None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise BfclInputError(f"{where}.arguments: expected an object, got {type(args).__name__}")
    return item["name"], args


def question(functions: Any, ground_truth: Any, category: str, language: str) -> Question:
    """The compiled question, reused while the same doc and answer objects come back (an
    evaluation checks many outputs per question); see checker/memo.py."""
    extra = (category, language)
    return QUESTIONS.get(functions, ground_truth, extra) or \
        QUESTIONS.put(functions, ground_truth, extra, Question(functions, ground_truth, category, language))


def check_bfcl(calls: Any, functions: Any, ground_truth: Any, *, category: str | None = None,
               language: str | None = None, fc: bool = False, question_id: Any = None) -> Verdict:
    """BFCL's verdict on ``calls``. ``fc``: the model is a function-calling model (dotted
    names are written with ``_``). Raises BfclInputError for an unknown category or
    language and for docs or answers the official checker cannot read; malformed calls
    give an ``unparsable`` verdict (BFCL: ``ast_decoder:decoder_wrong_output_format``)."""
    cacheable = type(category) is str and (language is None or type(language) is str)
    key = (category if language is None else (category, language)) if cacheable else None
    resolved = _RESOLVED.get(key) if cacheable else None
    if resolved is None:
        resolved = resolve(category, language, question_id, functions, ground_truth)
        if cacheable:
            _RESOLVED[key] = resolved
    category, language = resolved
    q = question(functions, ground_truth, category, language)
    try:
        parsed = read_calls(calls)
    except BfclInputError as exc:
        details = {"calls": 0, "mode": "bfcl", "category": category, "language": language, "fc": fc,
                   "bfcl_error_type": DECODER_FORMAT}
        return make("unparsable", defects=[Defect("unparsable", str(exc))], details=details)
    valid, error_type, message, index, param, cause = q.check(parsed, fc)
    details = {"calls": len(parsed), "mode": "bfcl", "category": category, "language": language, "fc": fc,
               "bfcl_error_type": error_type}
    api = parsed[0][0] if parsed else None
    if valid:
        return quick_verdict("correct", True, api, (), details)
    kind = _kind(cause, q, parsed, index, param, fc)
    name = parsed[index][0] if index is not None else None
    defect = quick_defect(kind, message, index, name, param) if type(message) is str else \
        lazy_defect(kind, message, index, name, param)  # Words: written when read
    return quick_verdict(kind, False, api, (defect,), details)


def _kind(cause: str | None, q: Question, calls: list[tuple[str, dict[str, Any]]], index: int | None,
          param: str | None, fc: bool) -> str:
    """toolsift's verdict for a BFCL failure: a name no doc has is a hallucinated tool, a
    parameter no doc has a hallucinated parameter; any other mismatch is a wrong call."""
    kind = _KIND.get(cause or "", "wrong_call")
    if kind in ("hallucinated_tool", "hallucinated_param") and index is not None:
        doc = q.doc_named(calls[index][0], fc)
        if kind == "hallucinated_tool":
            return "wrong_call" if doc is not None else kind
        props = (doc or {}).get("parameters", {}).get("properties", {})
        return kind if doc is None or param not in props else "wrong_call"
    return kind


__all__ = ["CATEGORIES", "LANGUAGES", "BfclInputError", "check_bfcl", "read_calls", "resolve"]
