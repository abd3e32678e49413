"""What `toolsift route` reads: a JSONL file of queries, or one conversation, from a file or stdin.

``-`` means stdin for both, so a follow-up turn needs no hand-written file:

    echo '[{"role":"user","content":"weather in Oslo?"},{"role":"user","content":"and in Paris?"}]' \\
        | toolsift route --messages -

Every mistake is one line naming the file (``<stdin>`` for -), the line and the field.
"""
from __future__ import annotations

import json
import sys
from typing import Any

from apidb.jsonl import JsonLineError, TextFileError, parse_lines, read_utf8
from router.errors import RouterError


def _text(source: str, what: str) -> tuple[str, str]:
    """(name for messages, text) of a file path or ``-`` (stdin)."""
    if source == "-":
        data = sys.stdin.buffer.read()
        try:
            return "<stdin>", data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RouterError(f"<stdin>: not UTF-8 text (byte {exc.start})") from None
    try:
        return source, read_utf8(source, what)
    except TextFileError as exc:
        raise RouterError(str(exc)) from None


def read_queries(source: str) -> list[tuple[str, Any]]:
    """(id, query-or-messages) per line; a bad line is an error naming file and line."""
    name, text = _text(source, "queries file")
    items = []
    try:
        for n, row in parse_lines(text):
            if not isinstance(row, dict) or ("query" not in row and "messages" not in row):
                raise RouterError(f"{name}: line {n}: expected an object with 'query' or 'messages'")
            items.append((str(row.get("id", str(n))), row["query"] if "query" in row else row["messages"]))
    except JsonLineError as exc:
        raise RouterError(f"{name}: line {exc.lineno}: not JSON ({exc.msg})") from None
    if not items:
        raise RouterError(f"{name}: no queries (one JSON object per line: {{\"id\", \"query\"}})")
    return items


def read_messages(source: str) -> list[dict[str, Any]]:
    """One conversation: a JSON list of messages, ``{"messages": [...]}``, or JSON Lines with one
    message per line (what many chat logs are)."""
    name, text = _text(source, "messages file")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as whole:
        try:  # one message per line?
            value = [row for _, row in parse_lines(text)]
        except JsonLineError:
            raise RouterError(f"{name}: line {whole.lineno}: not JSON ({whole.msg})") from None
    if isinstance(value, dict) and "messages" in value:
        value = value["messages"]
    if not isinstance(value, list) or not value:
        raise RouterError(f"{name}: expected a list of messages or {{\"messages\": [...]}}, "
                          f"got {type(value).__name__}")
    for i, m in enumerate(value):
        if not isinstance(m, dict) or "role" not in m:
            raise RouterError(f"{name}: message {i}: expected an object with 'role' and 'content'")
    return value
