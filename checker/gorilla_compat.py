"""Gorilla-compatible scoring: the upstream APIBench AST rules, reproduced.

Upstream (gorilla ``eval/eval-scripts/ast_eval_{th,tf,hf}.py``, described in
shared/data/README.md §1.5) cuts the text after ``api_call`` up to
``api_provider``, parses it with tree-sitter and walks the API database in file
order: an entry matches when some node of the candidate starts with the entry's
function text and every "key" argument text of the entry is a *substring* of that
node; the first matching entry's *domain* compared with the gold domain decides
correctness; no match is a hallucination. We reproduce this with a quote-aware
bracket scanner instead of tree-sitter (no compiled grammar needed); the figures
agree with upstream within a point on all 24 released response files (see the
gorilla benchmark). This is deliberately *not* our strict matcher: it credits a
different API of the same domain and accepts substrings.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from apidb.record import ApiRecord

from .budget import TIME_BUDGET, OverBudget, check_time, remaining

from .repair import span_end, split_args

_FUNC = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?=\()")
_KEYWORD = re.compile(r"^\s*[A-Za-z_]\w*\s*=(?!=)")


def flavor_of(namespace: str | None) -> str:
    """Which upstream script's argument rule applies: th, tf or hf."""
    ns = (namespace or "").lower()
    if "torch" in ns:
        return "th"
    if "tensorflow" in ns or "tfhub" in ns or ns == "tf":
        return "tf"
    return "hf"


def cut_api_call(text: str, flavor: str) -> str | None:
    """The upstream extraction: text between 'api_call' and 'api_provider'.

    TorchHub's script skips answers without 'api_call' (None: neither correct nor
    hallucinated); the TF and HF scripts score the whole text instead.
    """
    parts = text.split("api_call")
    if len(parts) == 1:
        return None if flavor == "th" else text
    out = parts[1].split("api_provider")[0]
    start = out.index(":") if ":" in out else 0
    end = out.rindex(")") if ")" in out else -2
    return out[start + 2:end + 1]


def _value_text(arg: str) -> str:
    """tree-sitter's ``children[2]`` of an argument: a keyword's value, else ''.

    For a string node children[2] is its closing quote, which the upstream strip of
    single quotes turns into '' (matches anything); we mirror that.
    """
    if _KEYWORD.match(arg):
        return arg.split("=", 1)[1].strip()
    return ""


def key_args(call: str, flavor: str) -> tuple[str, list[str]] | None:
    """(function text, key argument texts) of a database ``api_call``."""
    call = call.strip()
    m = _FUNC.match(call)
    if not m:
        return None
    end, _, _ = span_end(call, m.end())
    inner = call[m.end() + 1:end - 1] if end <= len(call) and call[end - 1:end] == ")" else call[m.end() + 1:]
    args = []
    for arg in split_args(inner):
        if flavor == "th":
            if "repo_or_dir" in arg or "model" in arg:
                args.append(_value_text(arg))
        elif flavor == "tf":
            args.append(_value_text(arg) if ("model=" in arg or "model =" in arg) else arg)
        else:
            args.append(_value_text(arg) if "=" in arg else arg)
    return m.group(0), [a.lstrip("'").rstrip("'") for a in args]


def _code_positions(text: str) -> list[int]:
    """Start offsets of identifiers in code context, as a Python lexer sees them.

    A quote opens a string only if it closes on the same line; an unterminated
    quote is skipped (tree-sitter's error recovery does the same), so
    ``"model = torch.hub.load('a', 'b')`` still holds a call while
    ``'model = torch.hub.load('a', 'b')`` does not (its quotes pair differently).
    """
    starts, i, n = [], 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"":
            triple = text[i:i + 3] == ch * 3
            j = _string_end(text, i, ch, triple)
            i = j if j is not None else i + 1
        elif ch == "\\":
            i += 2  # outside strings tree-sitter lexes backslash+char as one error token
        elif ch == "#":
            nl = text.find("\n", i)
            i = n if nl < 0 else nl
        elif ch.isalpha() or ch == "_":
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            starts.append(i)
            i = j
        else:
            i += 1
    return starts


def _ident_char(text: str, i: int) -> bool:
    return i < len(text) and (text[i].isalnum() or text[i] == "_")


def _string_end(text: str, i: int, quote: str, triple: bool) -> int | None:
    if triple:
        end = text.find(quote * 3, i + 3)
        return None if end < 0 else end + 3
    j = i + 1
    while j < len(text):
        ch = text[j]
        if ch == "\\":
            j += 2
            continue
        if ch == quote:
            return j + 1
        if ch == "\n":
            return None
        j += 1
    return None


def candidate_calls(text: str) -> list[tuple[str, str]]:
    """(function text, call text) of every call node, in upstream's visiting order.

    Upstream pops a stack of nodes, so an enclosing call comes before what it
    contains and later siblings before earlier ones: sort by end desc, start asc.
    """
    found = []
    import_at = -1
    for pos in _code_positions(text):
        if pos and (text[pos - 1] == "." or text[pos - 1].isalnum() or text[pos - 1] == "_"):
            continue  # the middle of a dotted name
        if text.startswith("import", pos) and not _ident_char(text, pos + 6) \
                and text[pos - 1:pos] not in ("'", '"'):
            import_at = pos
            continue
        m = _FUNC.match(text, pos)
        if m:
            check_time()  # each call's span is scanned to its end: quadratic in nested calls
            if import_at >= 0 and "\n" not in text[import_at:pos]:
                # with escaped newlines (literal "\\n") a whole answer is one line, and
                # tree-sitter's recovery of the import statement swallows the name of
                # the next call (its arguments still parse)
                import_at = -1
                continue
            end, _, _ = span_end(text, m.end())
            found.append((m.start(), end, m.group(0)))
    found.sort(key=lambda t: (-t[1], t[0]))
    return [(name, text[s:e]) for s, e, name in found]


_LEAD = re.compile(r"\s*(?:[A-Za-z_]\w*\s*=(?!=)\s*)?")
_WORDS = re.compile(r"[\w .]*")


def last_node_text(text: str) -> str:
    """An approximation of the text of the node upstream's traversal visits last.

    That node is found by following the first child that has children, from the
    root down: for ``x = 'url'`` the string, for ``a.b(...)`` the attribute ``a.b``,
    for ``f('task', ...)`` the first argument, for prose an error node holding the
    first words.
    """
    m = _LEAD.match(text)
    rest = text[m.end():] if m else text
    if not rest:
        return ""
    ch = rest[0]
    if ch in "'\"":
        end = _string_end(rest, 0, ch, rest[:3] == ch * 3)
        return rest[:end] if end else ""
    f = _FUNC.match(rest)
    if f:
        if "." in f.group(0):
            return f.group(0)
        args = rest[f.end() + 1:].lstrip()
        if args[:1] in ("'", '"'):
            end = _string_end(args, 0, args[0], False)
            return args[:end] if end else ""
        return ""
    d = re.match(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", rest)
    if d:
        return d.group(0)
    w = _WORDS.match(rest)
    return w.group(0).strip() if w else ""


@dataclass(frozen=True)
class Entry:
    func: str
    args: tuple[str, ...]
    domain: str | None
    record: ApiRecord


class GorillaDB:
    """The API database in upstream order, with each entry's key arguments precomputed.

    Records merged by the loader keep the domain of their first raw row; ordering
    them by first occurrence (``metadata['source_index']`` when present, else the
    given order) makes "first matching entry" the same as upstream's.

    ``backend``: "tree-sitter" (the parser upstream used, when the optional
    ``tree_sitter`` + ``tree_sitter_python`` packages are installed: exact), or
    "scanner" (our bracket/quote scanner approximating tree-sitter's error
    recovery; within about two points per cell). "auto" picks tree-sitter if present.
    """

    def __init__(self, records: list[ApiRecord], flavor: str, backend: str = "auto") -> None:
        self.flavor = flavor
        self.ts = _treesitter() if backend in ("auto", "tree-sitter") else None
        if backend == "tree-sitter" and self.ts is None:
            from .errors import CheckerError

            raise CheckerError("gorilla mode backend 'tree-sitter' needs the tree_sitter and "
                                "tree_sitter_python packages")
        self.backend = "tree-sitter" if self.ts is not None else "scanner"
        # a SQLite catalog returns records in id order, which changes "first matching
        # entry" (up to 7 points on these files); source_index restores the file order
        self.order_known = all("source_index" in r.metadata for r in records)
        ordered = sorted(enumerate(records), key=lambda t: (t[1].metadata.get("source_index", t[0]), t[0]))
        self.entries: list[Entry] = []
        for _, rec in ordered:
            parsed = self._key_args(rec.call or "")
            if parsed is None or not parsed[1]:
                continue  # upstream skips entries without key arguments
            self.entries.append(Entry(parsed[0], tuple(parsed[1]), rec.metadata.get("domain"), rec))

    def _key_args(self, call: str) -> tuple[str, list[str]] | None:
        if self.ts is None:
            return key_args(call, self.flavor)
        return _ts_key_args(self.ts, call, self.flavor)

    def _nodes(self, candidate: str) -> tuple[dict[str, str], str]:
        """first-child text -> text of the first node (in upstream's visiting order), last node text."""
        if self.ts is not None:
            return _ts_nodes(self.ts, candidate)
        by_name: dict[str, str] = {}
        for name, code in candidate_calls(candidate):
            by_name.setdefault(name, code)
        return by_name, last_node_text(candidate)

    def match(self, candidate: str) -> Entry | None:
        by_name, fallback = self._nodes(candidate)
        for entry in self.entries:
            # no node starts with this function: upstream's loop then leaves the
            # *last visited* node in place and checks the arguments against it
            code = by_name.get(entry.func, fallback)
            if all(a in code for a in entry.args):
                return entry
        return None


def _treesitter():  # noqa: ANN202 - optional dependency, imported lazily
    try:
        import warnings

        import tree_sitter
        import tree_sitter_python

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parser = tree_sitter.Parser()
            parser.set_language(tree_sitter.Language(tree_sitter_python.language(), "python"))
        return parser
    except Exception:  # noqa: BLE001 - absent or an incompatible version: use the scanner
        return None


def _ts_key_args(parser, call: str, flavor: str) -> tuple[str, list[str]] | None:  # noqa: ANN001
    """Upstream's reading of a database call: function text and key argument texts."""
    try:
        root = parser.parse(call.encode("utf-8")).root_node
        stmt = root.children[0].children[0]
        if stmt.child_count == 0:
            return None
        func = stmt.children[0].text.decode("utf-8", "replace")
        args = []
        for child in stmt.children[1].children:
            text = child.text.decode("utf-8", "replace")
            if flavor == "th":
                if "repo_or_dir" in text or "model" in text:
                    args.append(child.children[2].text.decode("utf-8", "replace"))
            elif flavor == "tf" and ("model=" in text or "model =" in text):
                args.append(child.children[2].text.decode("utf-8", "replace"))
            elif flavor == "hf" and "=" in text:
                args.append(child.children[2].text.decode("utf-8", "replace"))
            elif flavor != "th" and text not in ("(", ")", ","):
                args.append(text)
    except (IndexError, AttributeError):
        return None
    return func, [a.lstrip("'").rstrip("'") for a in args]


def _ts_nodes(parser, candidate: str) -> tuple[dict[str, str], str]:  # noqa: ANN001
    # tree-sitter's error recovery is quadratic on some answers (56 KB of "x if y else ,"
    # took 6 s): the parse gets what is left of the check's time budget, natively enforced
    left = remaining()
    parser.set_timeout_micros(0 if left is None else max(1, int(left * 1e6)))
    try:
        root = parser.parse(candidate.encode("utf-8", "replace")).root_node
    except ValueError:  # "Parsing failed": the timeout
        parser.reset()
        raise OverBudget(f"not checked within the time budget ({TIME_BUDGET:g}s)") from None
    # The walk decodes a node's text only for a first child not seen before: 100,000 nested
    # parentheses are 100,000 nodes whose texts sum to gigabytes, all under the same first
    # child "(". Chains whose first children all differ (a.b.c..., f()()()...) stay quadratic
    # as upstream's reading is: the deadline is consulted every _WALK_STEP nodes.
    by_name: dict[str, str] = {}
    stack, last = [root], root
    seen = 0
    while stack:
        node = stack.pop()
        last = node
        seen += 1
        if seen % _WALK_STEP == 0:
            check_time()
        children = node.children
        if children:
            key = children[0].text.decode("utf-8", "replace")
            if key not in by_name:
                by_name[key] = node.text.decode("utf-8", "replace")
        stack.extend(c for c in children if c.child_count)
    return by_name, last.text.decode("utf-8", "replace")


_WALK_STEP = 1024  # nodes walked between two looks at the deadline
