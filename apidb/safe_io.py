"""Reading untrusted input within limits: regular files of bounded size, JSON and YAML
with bounded nesting and alias expansion, integers Python can print, valid Unicode.

Catalog sources, JSON Lines inputs and the checker's inputs all come from outside, and a
few hundred bytes can ask for gigabytes (a YAML "billion laughs"), recurse past the C
stack (``[[[[...``), or hold values that fail only later, in SQLite or in a message
(``\\ud800``, a 5,000-digit integer). Every such document is refused here, at the
boundary, with a message naming where in the document the problem is; nothing
downstream has to defend itself against it. The limits are documented in docs/security.md.
"""
from __future__ import annotations

import json
import math
import os
import re
import stat
import sys
from typing import Any

MAX_SOURCE_BYTES = 256 * 1024 * 1024  # default; TOOLSIFT_MAX_SOURCE_BYTES overrides it
MAX_DEPTH = 128                       # nesting levels of one document (real specs: < 40)
MAX_INT_DIGITS = 4_300                # Python cannot print a longer int (sys.get_int_max_str_digits)
_MAX_INT_BITS = int(MAX_INT_DIGITS * math.log2(10))  # fewer bits: certainly at most that many digits
_INT_LIMIT = 10 ** MAX_INT_DIGITS
# YAML aliases and OpenAPI $refs: a document may expand to EXPANSION times its own
# number of values (plus SLACK, for small files), and never past MAX_EXPANDED_NODES.
EXPANSION = 20
SLACK = 100_000
MAX_EXPANDED_NODES = 10_000_000


def expansion_budget(nodes: int) -> int:
    """How many values a document of ``nodes`` values may expand to (aliases, $refs)."""
    return min(EXPANSION * nodes + SLACK, MAX_EXPANDED_NODES)

_SURROGATE = re.compile("[\ud800-\udfff]")
_STRUCT = re.compile(r'[\[\]{}"\\\n]')


class UnsafeDocument(ValueError):
    """A document breaks a limit. ``trail`` is the path of keys and indexes to the bad
    value (empty when the document as a whole is at fault); ``lineno``/``colno`` are set
    when the position in the text is known."""

    def __init__(self, reason: str, trail: tuple[Any, ...] = (), lineno: int | None = None,
                 colno: int | None = None) -> None:
        self.reason, self.trail, self.lineno, self.colno = reason, trail, lineno, colno
        where = f"line {lineno} column {colno}: " if lineno is not None else ""
        at = f" (at {format_trail(trail)})" if trail else ""
        super().__init__(f"{where}{reason}{at}")


def format_trail(trail: tuple[Any, ...]) -> str:
    """``('function', 0, 'parameters')`` -> ``function[0].parameters``."""
    out = ""
    for key in trail:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out


def lone_surrogate(text: str) -> int | None:
    """Index of the first lone surrogate in ``text`` (not valid Unicode; UTF-8 cannot
    encode it, so SQLite, tokenizers and stdout all fail on it), or None."""
    if text.isascii():
        return None
    m = _SURROGATE.search(text)
    return m.start() if m else None


def max_source_bytes() -> int:
    env = os.environ.get("TOOLSIFT_MAX_SOURCE_BYTES", "").strip()
    return int(env) if env.isdigit() and int(env) > 0 else MAX_SOURCE_BYTES


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def read_regular_file(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; OSError or ValueError otherwise.

    Opened non-blocking so a named pipe with no writer cannot hang us, then checked with
    fstat (on the open descriptor, so a symlink swapped in between changes nothing):
    pipes and devices (``/dev/zero``) never end, so they are refused, not read.
    """
    limit = max_source_bytes() if limit is None else limit
    fd = os.open(os.fspath(path), os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
            raise ValueError(f"is {kind}, not a regular file; catalog sources must be regular files")
        if st.st_size > limit:
            raise ValueError(_too_big(st.st_size, limit))
        os.set_blocking(fd, True)
        data = fh.read(limit + 1)  # a file still growing stops at the limit too
    if len(data) > limit:
        raise ValueError(_too_big(len(data), limit))
    return data


def _too_big(size: int, limit: int) -> str:
    return (f"file is {size:,} bytes, over the {limit:,}-byte limit "
            "(set TOOLSIFT_MAX_SOURCE_BYTES to raise it)")


# -- JSON ------------------------------------------------------------------------------
class _LongInt(str):
    """A JSON integer too long to be a Python int we can print; reported by `check_value`."""


def _parse_int(digits: str) -> Any:
    return int(digits) if len(digits.lstrip("-")) <= MAX_INT_DIGITS else _LongInt(digits)


def loads_json(text: str, *, strict_unicode: bool = True) -> Any:
    """``json.loads`` within the limits: JSONDecodeError for bad syntax, UnsafeDocument
    for a document nested too deeply, an over-long integer or (``strict_unicode``) a
    lone surrogate escape like ``\\ud800``."""
    try:
        value = json.loads(text, parse_int=_parse_int)
    except RecursionError:  # the C decoder stops near the interpreter's recursion limit
        raise _too_deep_at(text) from None
    check_value(value, strict_unicode=strict_unicode)
    return value


def _too_deep_at(text: str) -> UnsafeDocument:
    """Where ``text`` first nests deeper than MAX_DEPTH (brackets outside strings)."""
    depth, pos, quoted = 0, 0, False
    while True:
        m = _STRUCT.search(text, pos)
        if m is None:
            return UnsafeDocument(f"nested more than {MAX_DEPTH} levels deep")
        ch, pos = m.group(), m.end()
        if quoted:
            if ch == "\\":
                pos += 1
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                line = text.count("\n", 0, m.start()) + 1
                col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
                return UnsafeDocument(f"nested more than {MAX_DEPTH} levels deep", lineno=line, colno=col)
        elif ch in "]}":
            depth -= 1


def check_value(value: Any, *, strict_unicode: bool = True, max_depth: int = MAX_DEPTH,
                max_nodes: int | None = None) -> None:
    """Raise UnsafeDocument, naming the path, for the first value over a limit (and for
    more than ``max_nodes`` values in all, when given).

    Iterative (an explicit stack), so it cannot itself recurse too deeply. The trail of
    each value is a linked (key, parent) pair, turned into a path only on error.
    """
    # Nearly every value is within limits: a quick recursive pass (depth is bounded by
    # max_depth, so recursion is safe) answers that at a fifth of the cost of the walk
    # below, which keeps every value's trail so that it can name where a limit is broken.
    if 0 <= quick_count(value, 0, max_depth, strict_unicode) <= (max_nodes or sys.maxsize):
        return
    stack: list[tuple[Any, int, Any]] = [(value, 0, None)]
    seen = 0
    while stack:
        node, depth, link = stack.pop()
        seen += 1
        if max_nodes is not None and seen > max_nodes:
            raise UnsafeDocument(f"more than {max_nodes:,} values")
        if isinstance(node, str):
            if isinstance(node, _LongInt):
                raise UnsafeDocument(f"integer of {len(node.lstrip('-')):,} digits (at most "
                                     f"{MAX_INT_DIGITS:,} are accepted)", _unlink(link))
            if strict_unicode and (i := lone_surrogate(node)) is not None:
                raise UnsafeDocument(f"string holds a lone surrogate {_u(node[i])} at character {i} "
                                     "(not valid Unicode)", _unlink(link))
        elif isinstance(node, int) and not isinstance(node, bool):
            if node.bit_length() > _MAX_INT_BITS and abs(node) >= _INT_LIMIT:  # (no str(): that is what fails)
                raise UnsafeDocument(f"integer of more than {MAX_INT_DIGITS:,} digits", _unlink(link))
        elif isinstance(node, (dict, list, tuple)):
            if depth >= max_depth:
                raise UnsafeDocument(f"nested more than {max_depth} levels deep", _unlink(link))
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for key, child in items:
                if strict_unicode and isinstance(key, str) and (i := lone_surrogate(key)) is not None:
                    raise UnsafeDocument(f"key holds a lone surrogate {_u(key[i])} (not valid Unicode)",
                                         _unlink(link))
                stack.append((child, depth + 1, (key, link)))


def quick_count(node: Any, depth: int = 0, max_depth: int = MAX_DEPTH, strict_unicode: bool = True) -> int:
    """The number of values in ``node`` (``depth`` levels down already) when certainly within
    the limits, else -1: the value goes to the exact walk of `check_value` (which also
    accepts what this pass does not know, e.g. subclasses).

    Leaves are decided in the loop over their container rather than by a call each: most
    values are leaves, and a call per value was most of the cost of admitting a model's
    tool calls (checker.budget)."""
    t = type(node)
    if t is str:
        return 1 if not strict_unicode or node.isascii() or lone_surrogate(node) is None else -1
    if t is int:
        return 1 if node.bit_length() <= _MAX_INT_BITS else -1
    if t is float or t is bool or node is None:
        return 1
    if depth >= max_depth:
        return -1
    if t is dict:
        if strict_unicode:
            for key in node:
                if type(key) is str and not key.isascii() and lone_surrogate(key) is not None:
                    return -1
        children: Any = node.values()
    elif t is list or t is tuple:
        children = node
    else:
        return -1
    n = 1
    for child in children:
        ct = type(child)
        if ct is str:
            if strict_unicode and not child.isascii() and lone_surrogate(child) is not None:
                return -1
        elif ct is int:
            if child.bit_length() > _MAX_INT_BITS:
                return -1
        elif not (ct is float or ct is bool or child is None):
            k = quick_count(child, depth + 1, max_depth, strict_unicode)
            if k < 0:
                return -1
            n += k
            continue
        n += 1
    return n


def _unlink(link: Any) -> tuple[Any, ...]:
    keys = []
    while link is not None:
        key, link = link
        keys.append(key)
    return tuple(reversed(keys))


def _u(ch: str) -> str:
    return f"\\u{ord(ch):04x}"


# -- YAML ------------------------------------------------------------------------------
def loads_yaml(text: str) -> Any:
    """A YAML document as JSON-shaped data (string keys, dates as strings), within limits.

    The document is composed into a node graph first (libyaml when present); aliases make
    that graph share nodes, so its expanded size is computed per node, once, before
    anything is built: a self-referencing alias or an expansion past the budget is refused
    without ever materializing it. yaml.YAMLError for bad syntax, UnsafeDocument for limits.
    """
    import yaml  # only YAML sources pay for the import

    # libyaml's loader when present: pure-Python YAML takes seconds on a 1 MB OpenAPI spec
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        budget = expansion_budget(_count_nodes(node, yaml))
        _check_expansion(node, yaml, budget)
        data = loader.construct_document(node)
    except ValueError as exc:  # the constructor's int()/float() on odd scalars (a 5,000-digit int)
        if isinstance(exc, UnsafeDocument):
            raise
        raise UnsafeDocument(f"unreadable value ({exc})") from None
    finally:
        loader.dispose()
    data = _json_shaped(data)
    check_value(data)
    return data


def _count_nodes(root: Any, yaml: Any) -> int:
    """Number of distinct nodes in the graph (what the text itself holds)."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                stack.extend((k, v))
    return len(seen)


def _check_expansion(root: Any, yaml: Any, budget: int) -> None:
    """(expanded size, height) of every node, post-order with memoization; raises on an
    alias cycle, on an expansion over ``budget`` or a height over MAX_DEPTH."""
    done: dict[int, tuple[int, int]] = {}
    active: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in done:
            continue
        kids = (node.value if isinstance(node, yaml.SequenceNode) else
                [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else [])
        if not children_done:
            if key in active:
                raise _yaml_error("an alias refers to a node that contains it (a cycle)", node)
            active.add(key)
            stack.append((node, True))
            for kid in kids:
                if id(kid) in active:
                    raise _yaml_error("an alias refers to a node that contains it (a cycle)", kid)
                if id(kid) not in done:
                    stack.append((kid, False))
            continue
        active.discard(key)
        size = 1 + sum(done[id(k)][0] for k in kids)
        height = 1 + max((done[id(k)][1] for k in kids), default=0)
        if size > budget:
            raise _yaml_error(f"aliases expand the document past {budget:,} values "
                              "(an alias bomb?)", node)
        if height > MAX_DEPTH:
            raise _yaml_error(f"nested more than {MAX_DEPTH} levels deep", node)
        done[key] = (size, height)


def _yaml_error(reason: str, node: Any) -> UnsafeDocument:
    mark = getattr(node, "start_mark", None)
    if mark is None:
        return UnsafeDocument(reason)
    return UnsafeDocument(reason, lineno=mark.line + 1, colno=mark.column + 1)


def _json_shaped(value: Any) -> Any:
    """A copy with JSON's shapes only: keys become strings (``200:`` -> ``"200"``, a date
    key -> its ISO text), dates and other scalars become strings, as ``json.dumps(default=str)``
    would make them. Iterative; the alias budget already bounds the copy's size."""
    out_root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, out_root, 0)]
    while stack:
        node, parent, slot = stack.pop()
        if isinstance(node, dict):
            copy: Any = {}
            for k, v in node.items():
                copy[_json_key(k)] = None
                stack.append((v, copy, _json_key(k)))
        elif isinstance(node, (list, tuple)):
            copy = [None] * len(node)
            stack.extend((v, copy, i) for i, v in enumerate(node))
        elif node is None or isinstance(node, (str, bool, int, float)):
            copy = node
        else:
            copy = str(node)
        parent[slot] = copy
    return out_root[0]


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, (bool, int, float)):
        return json.dumps(key)
    return str(key)
