"""Catch hallucinated API calls: code-style (Gorilla/APIBench) and JSON tool calls (OpenAI/BFCL).

    from checker import check_code, check_calls
    check_code("pipeline('summarization', model='facebook/bart-large-cnn-v9')", catalog)
    check_calls([{"name": "weather", "arguments": {"city": "Paris"}}], functions=tools)
    check_calls(calls, docs, possible_answer, mode="bfcl", category="live_simple")  # BFCL's own verdict

Strict and BFCL rules side by side: docs/checker.md.

Importing this package is cheap: libcst is loaded on the first code check.
"""
from __future__ import annotations

from .calls import check_calls
from .code import CodeIndex, check_code
from .errors import AuditError, CheckerError
from .suggest import suggest
from .verdict import Defect, Verdict

__all__ = ["AuditError", "CheckerError", "CodeIndex", "Defect", "Verdict", "check_calls", "check_code", "suggest"]
