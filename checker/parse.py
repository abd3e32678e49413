"""Parse (possibly broken) Python into a flat list of calls, with libcst.

Model output is often not valid Python: unquoted model ids
(``model=SG161222/Realistic_Vision_V1.4``), unbalanced brackets, prose around the
code. We parse the snippet as a module when we can; otherwise we repair what is
repairable and parse each call-shaped span on its own. Never raises on any text: the
worst result is an empty list of calls (with a ``note`` saying why, when a budget of
`checker.budget` stopped the parse). The one exception is `budget.OverBudget`, raised
between parse attempts when the current check's deadline has passed.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .budget import BoundedCache, check_time, too_complex
from .repair import (BARE_ID_FULL, closers, close_quote, cut_points, max_depth, positional_first,
                     quote_bare_ids, repairs, span_end)

MAX_CHARS = 20_000      # libcst is not fed more than this at once (1 MB prose would take seconds)
MAX_SPANS = 200         # call-shaped spans tried per snippet
MAX_DEPTH = 60          # deeper bracket nesting is not parsed (the native parser recurses)

# value kinds: ("str", s) ("num", text) ("name", dotted) ("call", index) ("other", node type)
Value = tuple[str, Any]


def _evaluated(node: Any, text: str) -> Any:
    """A string literal's value (``text``: its source), the same whatever the warning filters are.

    An invalid escape such as ``"\\}"`` in generated code makes ``literal_eval`` warn; under
    ``-W error`` that warning becomes a SyntaxError and the same call would get another verdict.
    The filters are only touched for literals with a backslash: ``catch_warnings`` swaps global
    state, so it stays off the common path of a checker running in several threads.
    """
    if "\\" not in text:
        return node.evaluated_value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return node.evaluated_value


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
    note: str | None = None  # why the text was not (fully) parsed, when a budget stopped it


_CALL_START = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*\s*\(")
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
                v = _evaluated(node, self.code(node))
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
            if BARE_ID_FULL.match(code):
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
    check_time()  # every attempt costs up to ~1 s on 20,000 characters: stop when time is up
    try:
        return _collect(_parsers()[0](text))
    except Exception:  # noqa: BLE001 - libcst raises ParserSyntaxError and friends
        return None


def _try_expr(text: str) -> list[Call] | None:
    check_time()
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
        end, still_open, depth = span_end(text, paren)
        span = text[m.start():end]
        calls = None
        if depth <= MAX_DEPTH:
            calls = _try_expr(span + closers(still_open))
            if calls is None:
                calls = _try_expr(quote_bare_ids(span) + closers(still_open))
            if calls is None:
                calls = _try_expr(positional_first(quote_bare_ids(span) + closers(still_open)))
            if calls is None and still_open:
                calls = _truncated(quote_bare_ids(span))
            if calls is None:
                closed = close_quote(span)
                if closed is not None:
                    calls = _try_expr(closed)
        if calls:
            out.extend(_offset(calls, len(out)))
            pos = end if end > m.end() else m.end()
        else:
            pos = m.end()  # look for calls inside this broken span
    return out


_CACHE = BoundedCache()


def parse_calls(text: str) -> Parsed:
    """All calls in ``text`` in pre-order; repaired when the text is not valid Python.

    Cached by the text actually parsed (at most MAX_CHARS of it), in a cache bounded in
    entries and characters: distinct 1 MB answers cost 20 KB each, not 1 MB.
    """
    if not isinstance(text, str) or ("(" not in text and "--" not in text):
        return Parsed(())
    text = text.replace("\x00", "")[:MAX_CHARS]
    return _CACHE.get_or_compute(text, _parse)


parse_calls.cache_clear = _CACHE.clear  # type: ignore[attr-defined]  # as with the lru_cache it replaces


def _parse(text: str) -> Parsed:
    # libcst only ever sees text within the complexity budget: an operator chain of
    # thousands costs minutes, nesting of thousands overflows its stack (the process dies)
    why = too_complex(text)
    if why:
        return Parsed((), repaired=True, note=why)
    fixes: list[str] = []
    if max_depth(text) <= MAX_DEPTH:
        calls = _try_module(text)
        if calls:
            return Parsed(tuple(calls))
        # a repair can move string boundaries (unescaping \\'): each is checked again
        fixes = [f for f in repairs(text) if too_complex(f) is None]
        for fixed in fixes:
            calls = _try_module(fixed)
            if calls:
                return Parsed(tuple(calls), repaired=True)
    # not Python, or Python whose calls sit inside a string literal: scan for spans
    scanned = _scan(text)
    if not scanned and fixes:
        scanned = _scan(fixes[-1])
    if not scanned:
        scanned = _shell(text)
    return Parsed(tuple(scanned), repaired=True)


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


def _truncated(span: str) -> list[Call] | None:
    """An unclosed call followed by prose: keep the longest prefix that parses."""
    for cut in reversed(cut_points(span)[-3:]):
        head = span[:cut]
        _, still_open, _ = span_end(head, head.index("("))
        calls = _try_expr(head + closers(still_open))
        if calls:
            return calls
    return None

