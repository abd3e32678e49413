"""Repairs for broken model code: bracket/quote scanning, bare ids, argument order.

Pure string work used by the parser (parse.py) and the Gorilla-compatible scorer.
"""
from __future__ import annotations

import re

# an unquoted hub id as an argument: (=|,|() owner/name[...]  followed by , or )
_BARE_ID = re.compile(r"""(?P<pre>[(,=]\s*)(?P<id>[A-Za-z0-9][\w.\-]*(?:/[\w.\-]+)+)(?=\s*[,)])""")
BARE_ID_FULL = re.compile(r"^[A-Za-z0-9][\w.\-]*(?:/[\w.\-]+)+$")
_OPEN, _CLOSE = "([{", ")]}"
_PAIR = {")": "(", "]": "[", "}": "{"}


def quote_bare_ids(text: str) -> str:
    """``model=SG161222/Realistic_Vision_V1.4`` -> ``model='SG161222/Realistic_Vision_V1.4'``."""
    return _BARE_ID.sub(lambda m: f"{m['pre']}'{m['id']}'", text)


_SPECIAL = re.compile(r"""[()\[\]{}'"\\\n]""")


def span_end(text: str, start: int) -> tuple[int, list[str], int]:
    """Index after the bracket closing the one opened at ``start``; unclosed -> len(text).

    Also returns the brackets still open at the end (to close them) and the max depth.
    Jumps from one bracket/quote to the next with a regex (a char loop is 10x slower).
    """
    stack: list[str] = []
    quote = ""
    depth = 0
    pos, n = start, len(text)
    while pos < n:
        m = _SPECIAL.search(text, pos)
        if m is None:
            break
        i, ch = m.start(), m.group()
        pos = i + 1
        if quote:
            if ch == "\\":
                pos = i + 2
            elif ch == quote or ch == "\n":
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in _OPEN:
            stack.append(ch)
            depth = max(depth, len(stack))
        elif ch in _CLOSE:
            if stack and stack[-1] == _PAIR[ch]:
                stack.pop()
                if not stack:
                    return i + 1, [], depth
            elif not stack:
                return i, [], depth
    return n, stack, depth


def closers(stack: list[str]) -> str:
    return "".join(_CLOSE[_OPEN.index(c)] for c in reversed(stack))


def drop_trailing_quote(text: str) -> str:
    """``text`` without a last quote character and the whitespace around it (unchanged when the
    last non-space character is no quote). String methods, not a ``\\s*["']\\s*$`` regex: the
    regex restarts at every character of a whitespace run, so an open call followed by 20,000
    spaces spent the whole 2 s check budget here (quadratic) and ended ``unparsable``."""
    body = text.rstrip()
    if body.endswith(("'", '"')):
        return body[:-1].rstrip()
    return text


def repairs(text: str) -> list[str]:
    """Whole-text repairs, cheapest first: quote bare ids; drop a stray closing quote
    (response files end code with a JSON artifact like ``...)\\n"``)."""
    out = []
    fixed = quote_bare_ids(text)
    if fixed != text:
        out.append(fixed)
    stripped = drop_trailing_quote(fixed)
    if stripped != fixed:
        out.append(stripped)
    if "\\" in stripped:
        # answers escaped twice over (\\' for '): one more level of unescaping
        unescaped = stripped.replace("\\\\", "\\").replace("\\'", "'").replace('\\"', '"')
        if unescaped != stripped:
            out.append(unescaped)
    return out


_KW = re.compile(r"^\s*[A-Za-z_]\w*\s*=(?!=)")


def _separators(text: str):
    """(index, char, depth) of each comma and each closing quote outside strings, with the
    bracket depth (outside strings) at that point; an escaped character is skipped."""
    depth, quote, i = 0, "", 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
                yield i, ch, depth
        elif ch in "'\"":
            quote = ch
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        elif ch == ",":
            yield i, ch, depth
        i += 1


def split_args(inner: str) -> list[str]:
    """Top-level comma split of an argument list (quote and bracket aware)."""
    cuts = [i for i, ch, depth in _separators(inner) if ch == "," and depth == 0]
    bounds = zip([-1, *cuts], [*cuts, len(inner)])
    return [part for a, b in bounds if (part := inner[a + 1:b].strip())]


def positional_first(span: str) -> str:
    """``f(a=1, 'x')`` (a syntax error) -> ``f('x', a=1)``: positional arguments moved first."""
    head, paren, rest = span.partition("(")
    if not paren or not rest.endswith(")"):
        return span
    args = split_args(rest[:-1])
    pos = [a for a in args if not _KW.match(a) and not a.startswith("*")]
    kws = [a for a in args if _KW.match(a) or a.startswith("*")]
    return f"{head}({', '.join(pos + kws)})"


_TAIL = re.compile(r"[)\]}\s]*$")


def close_quote(span: str) -> str | None:
    """``f('a/b)`` -> ``f('a/b')``: close a string left open, before the trailing brackets."""
    for quote in ("'", '"'):
        if span.count(quote) % 2 == 1:
            tail = _TAIL.search(span)
            head = span[: tail.start()] if tail else span
            fixed = head + quote + (tail.group(0) if tail else "")
            _, still_open, _ = span_end(fixed, fixed.index("("))
            return fixed + closers(still_open)
    return None


def cut_points(span: str) -> list[int]:
    """Where an unclosed call's arguments could end: after a string, before a comma."""
    return [i + 1 if ch != "," else i for i, ch, depth in _separators(span) if ch != "," or depth == 1]


def max_depth(text: str) -> int:
    depth = best = 0
    for ch in text:
        if ch in _OPEN:
            depth += 1
            if depth > best:
                best = depth
        elif ch in _CLOSE and depth:
            depth -= 1
    return best
