"""Turning a conversation into a retrieval query, and a long request into sub-queries.

The last user turn leads; then the previous user turns (newest first), the names of
tools already called and short tool results, so that "and in Paris?" after a weather
question still retrieves the weather tool.
"""
from __future__ import annotations

import re
from typing import Any, Iterable

from apidb.safe_io import lone_surrogate

from ..errors import RouterError

MAX_QUERY_CHARS = 50_000   # a plain query longer than this is refused (clear error)
_PREV_USER_TURNS = 2       # older turns rarely name the tool the next call needs
_TOOL_RESULT_CHARS = 200   # a tool result's first words say what it was about; the rest is data
_PART_CHARS = 2_000        # each part of a conversation query is capped, so messages never fail


def _text_of(content: Any) -> str:
    """Text of an OpenAI message ``content`` (str or list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content
                        if isinstance(p, (dict, str)))
    return ""


def _called_tools(message: dict[str, Any]) -> list[str]:
    names = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            names.append(fn["name"])
    fc = message.get("function_call")
    if isinstance(fc, dict) and isinstance(fc.get("name"), str):
        names.append(fc["name"])
    return names


def build_query(messages: Iterable[dict[str, Any]]) -> str:
    """One query string from an OpenAI-style messages list (see the module doc)."""
    msgs = [m for m in messages if isinstance(m, dict)]
    user_idx = [i for i, m in enumerate(msgs) if m.get("role") == "user" and _text_of(m.get("content")).strip()]
    if not user_idx:
        raise RouterError("messages hold no user turn with text to route on")
    last = user_idx[-1]
    parts = [_text_of(msgs[last].get("content")).strip()[:_PART_CHARS]]
    for i in reversed(user_idx[:-1][-_PREV_USER_TURNS:]):
        parts.append(_text_of(msgs[i].get("content")).strip()[:_PART_CHARS])
    tools: list[str] = []
    results: list[str] = []
    for m in msgs:
        if m.get("role") == "assistant":
            tools += [t for t in _called_tools(m) if t not in tools]
        elif m.get("role") in ("tool", "function"):
            text = _text_of(m.get("content")).strip()
            if text:
                results.append(text[:_TOOL_RESULT_CHARS])
    if tools:
        parts.append("tools used: " + " ".join(tools))
    parts += results[-2:]
    return "\n".join(p for p in parts if p)


def normalize_query(query_or_messages: Any) -> str:
    """A non-empty, bounded query string of valid Unicode from a str or a messages list,
    else RouterError."""
    query = _normalize(query_or_messages)
    # a lone surrogate (JSON "\ud800") cannot be encoded: the tokenizer would raise mid-run
    if (i := lone_surrogate(query)) is not None:
        raise RouterError(f"query holds a lone surrogate \\u{ord(query[i]):04x} at character {i} "
                          "(not valid Unicode)")
    return query


def _normalize(query_or_messages: Any) -> str:
    if isinstance(query_or_messages, str):
        query = query_or_messages.strip()
        if not query:
            raise RouterError("empty query: give a request or a conversation to route on")
        if len(query) > MAX_QUERY_CHARS:
            raise RouterError(f"query is {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,} "
                              "(pass the conversation as messages to have it trimmed)")
        return query
    if isinstance(query_or_messages, dict) and "messages" in query_or_messages:
        query_or_messages = query_or_messages["messages"]
    if isinstance(query_or_messages, (list, tuple)):
        return build_query(query_or_messages)
    raise RouterError(f"query must be a string or a messages list, not {type(query_or_messages).__name__}")


# A period after these is no sentence end. Titles stand before a name ("find Mr. Lu's resume", "Messi
# vs. Ronaldo"); the shortenings end a sentence only when a capital follows ("... of Apple Inc. Then
# ..."), not before a lower-case word or a number ("Apple Inc. and its CEO", "e.g. the", "No. 5").
# In the labelled routing requests 1 to 11 per file hold one, mostly "Inc.", "vs.", "No." and "St." (most
# of the "Inc." there do end their sentence: a capital follows).
_TITLES = frozenset({"mr", "mrs", "ms", "dr", "prof", "st", "mt", "jr", "sr", "rev", "gen", "capt", "sgt",
                     "vs", "v"})
_SHORTENINGS = frozenset({"inc", "ltd", "co", "corp", "llc", "plc", "etc", "approx", "no", "nos", "e.g",
                          "i.e", "u.s", "u.k", "fig", "vol", "ave", "dept", "est", "min", "max"})
_WORD_BEFORE = re.compile(r"(?:^|(?<=[^\w.]))((?:[A-Za-z]\.)*[A-Za-z]+)\.$")
_NEXT_CHAR = re.compile(r"\s*(\S)")


def abbreviation_ends(text: str, cut: int) -> bool:
    """Whether the sentence end found at ``cut`` (the space after a period) only closes an
    abbreviation: the cut is not a sentence end then."""
    if cut == 0 or text[cut - 1] != ".":
        return False
    word = _WORD_BEFORE.search(text, max(0, cut - 12), cut)
    if word is None:
        return False
    w = word.group(1).lower()
    if w in _TITLES:
        return True
    if w not in _SHORTENINGS:
        return False
    nxt = _NEXT_CHAR.match(text, cut)  # not text[cut:]: a long request has many periods
    return nxt is not None and (nxt.group(1).islower() or nxt.group(1).isdigit())


def cuts(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    """(start, end) of each match of ``pattern`` (sentence ends and connectives) in ``text``, less
    those that only close an abbreviation: what every splitter here and in router.ranking.coverage cuts at."""
    return [(m.start(), m.end()) for m in pattern.finditer(text) if not abbreviation_ends(text, m.start())]


# Sentence ends and the connectives people use to chain requests ("..., then ...").
_SPLIT = re.compile(r"(?<=[.?!;])\s+|\s*\b(?:and then|then|also|additionally|furthermore|"
                    r"moreover|as well as|in addition)\b[,:]?\s*", re.IGNORECASE)
_MIN_PART_WORDS = 4


def split_query(query: str, max_parts: int = 4) -> list[str]:
    """Sub-requests of a multi-request query; [query] when it is a single request.

    Fragments too short to stand alone are glued to the previous part. Only the first
    ``max_parts`` parts are kept (each one costs an encoder call).
    """
    found = cuts(_SPLIT, query)
    starts, ends = [0] + [e for _, e in found], [s for s, _ in found] + [len(query)]
    pieces = [p.strip(" ,") for p in (query[a:b] for a, b in zip(starts, ends)) if p.strip(" ,")]
    parts: list[str] = []
    for p in pieces:
        if parts and len(p.split()) < _MIN_PART_WORDS:
            parts[-1] = f"{parts[-1]} {p}"
        else:
            parts.append(p)
    if len(parts) <= 1:
        return [query]
    return parts[:max_parts]


_SENTENCE_END = re.compile(r"(?<=[.?!])\s+|\s*\n\s*")
_MIN_SENTENCE_WORDS = 3


def sentence_spans(query: str, max_sentences: int = 6) -> list[tuple[int, int]]:
    """(start, end) character spans of the sentences of a query that has several (each of
    at least three words); [] otherwise. Only the first ``max_sentences`` are kept.

    Used by hybrid ranking: each tool's dense score also counts its best match with one
    sentence, so a request whose sentences ask for different tools reaches each of them.
    Spans (not just texts) let the encoder pool each sentence's tokens out of one pass
    over the whole query.
    """
    spans, pos = [], 0
    bounds = cuts(_SENTENCE_END, query) + [(len(query), len(query))]
    for cut, nxt in bounds:
        s, e = pos, cut
        while s < e and query[s].isspace():
            s += 1
        while e > s and query[e - 1].isspace():
            e -= 1
        if len(query[s:e].split()) >= _MIN_SENTENCE_WORDS:
            spans.append((s, e))
        pos = nxt
    return spans[:max_sentences] if len(spans) >= 2 else []


def query_sentences(query: str, max_sentences: int = 6) -> list[str]:
    """The texts of :func:`sentence_spans`."""
    return [query[s:e] for s, e in sentence_spans(query, max_sentences)]
