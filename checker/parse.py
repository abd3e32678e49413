"""Parse (possibly broken) Python into a flat list of calls, with libcst.

Model output is often not valid Python: unquoted model ids
(``model=SG161222/Realistic_Vision_V1.4``), unbalanced brackets, prose around the
code. We parse the snippet as a module when we can; otherwise we repair what is
repairable and parse each call-shaped span on its own. Never raises: the worst
result is an empty list of calls.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

MAX_CHARS = 20_000      # libcst is not fed more than this at once (1 MB prose would take seconds)
MAX_SPANS = 200         # call-shaped spans tried per snippet
MAX_DEPTH = 60          # deeper bracket nesting is not parsed (the native parser recurses)

# value kinds: ("str", s) ("num", text) ("name", dotted) ("call", index) ("other", node type)
Value = tuple[str, Any]


class Call:
    """One call expression: ``path(args)``; ``parent`` is the enclosing call's index.

    ``code`` (the call's source) is rendered from the libcst node on first use only:
    rendering every call costs more than parsing it.
    """

    __slots__ = ("path", "args", "parent", "_code", "_node")

    def __init__(self, path: str, args: tuple[tuple[str | None, Value], ...], code: str | None = None,
                 parent: int | None = None, node: Any = None) -> None:
        self.path, self.args, self.parent, self._code, self._node = path, args, parent, code, node

    @property
    def code(self) -> str:
        if self._code is None:
            self._code = _empty_module().code_for_node(self._node) if self._node is not None else ""
        return self._code

    def __repr__(self) -> str:
        return f"Call(path={self.path!r}, args={self.args!r}, parent={self.parent!r})"


@dataclass(frozen=True, slots=True)
class Parsed:
    calls: tuple[Call, ...]
    repaired: bool = False


_CALL_START = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*\s*\(")
# an unquoted hub id as an argument: (=|,|() owner/name[...]  followed by , or )
_BARE_ID = re.compile(r"""(?P<pre>[(,=]\s*)(?P<id>[A-Za-z0-9][\w.\-]*(?:/[\w.\-]+)+)(?=\s*[,)])""")
_BARE_ID_FULL = re.compile(r"^[A-Za-z0-9][\w.\-]*(?:/[\w.\-]+)+$")
_OPEN, _CLOSE = "([{", ")]}"
_PAIR = {")": "(", "]": "[", "}": "{"}


def quote_bare_ids(text: str) -> str:
    """``model=SG161222/Realistic_Vision_V1.4`` -> ``model='SG161222/Realistic_Vision_V1.4'``."""
    return _BARE_ID.sub(lambda m: f"{m['pre']}'{m['id']}'", text)


_SPECIAL = re.compile(r"""[()\[\]{}'"\\\n]""")


def _span_end(text: str, start: int) -> tuple[int, list[str], int]:
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


def _closers(stack: list[str]) -> str:
    return "".join(_CLOSE[_OPEN.index(c)] for c in reversed(stack))


@lru_cache(maxsize=1)
def _cst() -> Any:
    import libcst  # imported on first parse, not at package import

    return libcst


@lru_cache(maxsize=1)
def _empty_module() -> Any:
    return _cst().Module(body=[])


# Fields of libcst nodes that never hold code (whitespace, brackets, separators).
_NOT_CODE = ("whitespace", "lpar", "rpar", "comma", "semicolon", "lbracket", "rbracket", "lbrace", "rbrace",
             "header", "footer", "leading_lines", "trailing", "newline", "indent", "equal", "colon", "dot",
             "operator", "star", "lines_after_decorators", "prefix", "quote")


@lru_cache(maxsize=None)
def _code_fields(node_type: type) -> tuple[str, ...]:
    import dataclasses

    return tuple(f.name for f in dataclasses.fields(node_type)
                 if not any(f.name.startswith(p) or p in f.name for p in _NOT_CODE))


def _children(node: Any) -> list[Any]:
    """Child nodes that may contain code; much cheaper than libcst's ``.children``."""
    base = _cst().CSTNode
    out = []
    for name in _code_fields(type(node)):
        value = getattr(node, name)
        if isinstance(value, base):
            out.append(value)
        elif isinstance(value, (list, tuple)):
            out.extend(v for v in value if isinstance(v, base))
    return out


class _Collector:
    """Walks a libcst tree collecting calls in pre-order (outer call first)."""

    def __init__(self) -> None:
        self.cst = _cst()
        self.calls: list[Call] = []

    def code(self, node: Any) -> str:
        return _empty_module().code_for_node(node)

    def path(self, node: Any) -> str:
        cst = self.cst
        parts: list[str] = []
        while isinstance(node, cst.Attribute):
            parts.append(node.attr.value)
            node = node.value
        if isinstance(node, cst.Name):
            parts.append(node.value)
            return ".".join(reversed(parts))
        return re.sub(r"\s+", "", self.code(node)) + ("." + ".".join(reversed(parts)) if parts else "")

    def value(self, node: Any, parent: int) -> Value:
        cst = self.cst
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
            try:
                v = node.evaluated_value
            except Exception:  # noqa: BLE001 - odd literals (bytes, bad escapes) are just code
                v = None
            if isinstance(v, str):
                return ("str", v)
            return ("other", self.code(node))
        if isinstance(node, (cst.Integer, cst.Float)):
            return ("num", node.value)
        if isinstance(node, (cst.Name, cst.Attribute)):
            return ("name", self.path(node))
        if isinstance(node, cst.Call):
            return ("call", self.call(node, parent))
        self.visit(node, parent)
        if isinstance(node, cst.BinaryOperation):
            code = re.sub(r"\s+", "", self.code(node))
            if _BARE_ID_FULL.match(code):
                return ("str", code)  # shi-labs/oneformer_x parses as arithmetic; it is an id
        # other expressions never identify an API: keep their kind, not their (costly) source
        return ("other", type(node).__name__)

    def call(self, node: Any, parent: int | None) -> int:
        idx = len(self.calls)
        self.calls.append(None)  # type: ignore[arg-type]  # reserve the pre-order slot
        self.visit(node.func, parent)  # calls in the callee: a(b)(c)
        args = []
        for arg in node.args:
            kw = arg.keyword.value if arg.keyword is not None else None
            if arg.star:
                self.visit(arg.value, idx)
                args.append((arg.star, ("other", type(arg.value).__name__)))
                continue
            args.append((kw, self.value(arg.value, idx)))
        self.calls[idx] = Call(path=self.path(node.func), args=tuple(args), parent=parent, node=node)
        return idx

    def visit(self, node: Any, parent: int | None) -> None:
        if isinstance(node, self.cst.Call):
            self.call(node, parent)
            return
        for child in _children(node):
            self.visit(child, parent)


def _collect(node: Any) -> list[Call]:
    col = _Collector()
    col.visit(node, None)
    return col.calls


@lru_cache(maxsize=1)
def _parsers() -> tuple[Any, Any]:
    """libcst's native (Rust) parse functions, called directly.

    The public ``libcst.parse_module`` first runs a pure-Python tokenizer to detect the
    file's indentation and newline style, which costs more than the parse itself and
    which we never need (we read calls, we never write code back).
    """
    cst = _cst()
    try:
        from libcst import native

        return (lambda text: native.parse_module(text, None)), native.parse_expression
    except (ImportError, AttributeError):  # pragma: no cover - older libcst
        return cst.parse_module, cst.parse_expression


def _try_module(text: str) -> list[Call] | None:
    try:
        return _collect(_parsers()[0](text))
    except Exception:  # noqa: BLE001 - libcst raises ParserSyntaxError and friends
        return None


def _try_expr(text: str) -> list[Call] | None:
    try:
        return _collect(_parsers()[1](text))
    except Exception:  # noqa: BLE001
        return None


def _offset(calls: list[Call], base: int) -> list[Call]:
    return [Call(c.path, tuple((k, ("call", v[1] + base) if v[0] == "call" else v) for k, v in c.args),
                 c._code, None if c.parent is None else c.parent + base, c._node) for c in calls]


def _scan(text: str) -> list[Call]:
    """Parse each call-shaped span on its own (repairing it), outermost spans first."""
    out: list[Call] = []
    pos, tried = 0, 0
    while tried < MAX_SPANS:
        m = _CALL_START.search(text, pos)
        if not m:
            break
        tried += 1
        paren = m.end() - 1
        end, still_open, depth = _span_end(text, paren)
        span = text[m.start():end]
        calls = None
        if depth <= MAX_DEPTH:
            calls = _try_expr(span + _closers(still_open))
            if calls is None:
                calls = _try_expr(quote_bare_ids(span) + _closers(still_open))
            if calls is None:
                calls = _try_expr(_positional_first(quote_bare_ids(span) + _closers(still_open)))
            if calls is None and still_open:
                calls = _truncated(quote_bare_ids(span))
            if calls is None:
                closed = _close_quote(span)
                if closed is not None:
                    calls = _try_expr(closed)
        if calls:
            out.extend(_offset(calls, len(out)))
            pos = end if end > m.end() else m.end()
        else:
            pos = m.end()  # look for calls inside this broken span
    return out


@lru_cache(maxsize=8_192)
def parse_calls(text: str) -> Parsed:
    """All calls in ``text`` in pre-order; repaired when the text is not valid Python."""
    if not isinstance(text, str) or ("(" not in text and "--" not in text):
        return Parsed(())
    text = text.replace("\x00", "")
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS]
    repairs: list[str] = []
    if _max_depth(text) <= MAX_DEPTH:
        calls = _try_module(text)
        if calls:
            return Parsed(tuple(calls))
        repairs = _repairs(text)
        for fixed in repairs:
            calls = _try_module(fixed)
            if calls:
                return Parsed(tuple(calls), repaired=True)
    # not Python, or Python whose calls sit inside a string literal: scan for spans
    scanned = _scan(text)
    if not scanned and repairs:
        scanned = _scan(repairs[-1])
    if not scanned:
        scanned = _shell(text)
    return Parsed(tuple(scanned), repaired=True)


_TRAILING_QUOTE = re.compile(r"""\s*["']\s*$""")


def _repairs(text: str) -> list[str]:
    """Whole-text repairs, cheapest first: quote bare ids; drop a stray closing quote
    (response files end code with a JSON artifact like ``...)\\n"``)."""
    out = []
    fixed = quote_bare_ids(text)
    if fixed != text:
        out.append(fixed)
    stripped = _TRAILING_QUOTE.sub("", fixed)
    if stripped != fixed:
        out.append(stripped)
    if "\\" in stripped:
        # answers escaped twice over (\\' for '): one more level of unescaping
        unescaped = stripped.replace("\\\\", "\\").replace("\\'", "'").replace('\\"', '"')
        if unescaped != stripped:
            out.append(unescaped)
    return out


_SHELL = re.compile(r"^\s*(?:\$\s*)?(?P<cmd>[\w./-]*[\w-])(?P<rest>(?:\s+\S+)+)\s*$")


def _shell(text: str) -> list[Call]:
    """A one-line command (``mlagents-load-from-hf --repo-id='x' --local-dir=d``) as a call.

    Some catalog entries are CLI invocations rather than Python; the path is
    ``$ <command>`` and each ``--option value`` becomes a keyword argument.
    """
    line = text.strip()
    m = _SHELL.match(line) if "\n" not in line and "--" in line else None
    if not m:
        return []
    import shlex

    try:
        tokens = shlex.split(m["rest"])
    except ValueError:
        return []
    args: list[tuple[str | None, Value]] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.startswith("-"):
            name, eq, value = tok.lstrip("-").partition("=")
            if not eq and i + 1 < len(tokens) and not tokens[i + 1].startswith("-"):
                value, i = tokens[i + 1], i + 1
            args.append((name.replace("-", "_"), ("str", value)))
        else:
            args.append((None, ("str", tok)))
        i += 1
    return [Call("$ " + m["cmd"], tuple(args), code=line)]


_KW = re.compile(r"^\s*[A-Za-z_]\w*\s*=(?!=)")


def split_args(inner: str) -> list[str]:
    """Top-level comma split of an argument list (quote and bracket aware)."""
    parts, depth, quote, cur = [], 0, "", []
    i = 0
    while i < len(inner):
        ch = inner[i]
        cur.append(ch)
        if quote:
            if ch == "\\" and i + 1 < len(inner):
                cur.append(inner[i + 1])
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        elif ch == "," and depth == 0:
            cur.pop()
            parts.append("".join(cur).strip())
            cur = []
        i += 1
    parts.append("".join(cur).strip())
    return [p for p in parts if p]


def _positional_first(span: str) -> str:
    """``f(a=1, 'x')`` (a syntax error) -> ``f('x', a=1)``: positional arguments moved first."""
    head, paren, rest = span.partition("(")
    if not paren or not rest.endswith(")"):
        return span
    args = split_args(rest[:-1])
    pos = [a for a in args if not _KW.match(a) and not a.startswith("*")]
    kws = [a for a in args if _KW.match(a) or a.startswith("*")]
    return f"{head}({', '.join(pos + kws)})"


_TAIL = re.compile(r"[)\]}\s]*$")


def _close_quote(span: str) -> str | None:
    """``f('a/b)`` -> ``f('a/b')``: close a string left open, before the trailing brackets."""
    for quote in ("'", '"'):
        if span.count(quote) % 2 == 1:
            tail = _TAIL.search(span)
            head = span[: tail.start()] if tail else span
            fixed = head + quote + (tail.group(0) if tail else "")
            _, still_open, _ = _span_end(fixed, fixed.index("("))
            return fixed + _closers(still_open)
    return None


def _cut_points(span: str) -> list[int]:
    """Where an unclosed call's arguments could end: after a string, before a comma."""
    cuts: list[int] = []
    depth, quote, i = 0, "", 0
    while i < len(span):
        ch = span[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
                cuts.append(i + 1)
        elif ch in "'\"":
            quote = ch
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        elif ch == "," and depth == 1:
            cuts.append(i)
        i += 1
    return cuts


def _truncated(span: str) -> list[Call] | None:
    """An unclosed call followed by prose: keep the longest prefix that parses."""
    for cut in reversed(_cut_points(span)[-3:]):
        head = span[:cut]
        _, still_open, _ = _span_end(head, head.index("("))
        calls = _try_expr(head + _closers(still_open))
        if calls:
            return calls
    return None


def _max_depth(text: str) -> int:
    depth = best = 0
    for ch in text:
        if ch in _OPEN:
            depth += 1
            if depth > best:
                best = depth
        elif ch in _CLOSE and depth:
            depth -= 1
    return best
