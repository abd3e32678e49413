"""What one check may cost: input size, expression complexity, time, cache memory.

The checker reads model output, which can be anything. Three mechanisms keep every
check to a verdict within bounds, whatever the input:

* admission (`admit_calls`, `admit_question`): the JSON given to ``check_calls`` is
  parsed and walked once within the limits of `apidb.safe_io` (nesting, integers Python
  can print) plus a value and call count, before any rule looks at it (docs and ground
  truth once per compiled question);
* complexity (`too_complex`): libcst's parser is quadratic or worse in the length of one
  operator chain (``a/a/a/...``, ``a.a.a...``): 4 KB took 15-24 s. Text whose longest
  chain at one bracket level is over MAX_CHAIN tokens is not handed to it;
* time (`deadline` / `check_time`): each check runs under a cooperative deadline that
  the parser's retry loops consult between attempts.

Exceeding any of them makes the verdict ``unparsable`` with the reason, never an exception.
"""
from __future__ import annotations

import contextvars
import re
import threading
import time
from collections import OrderedDict
from typing import Any, Callable

from apidb.safe_io import UnsafeDocument, check_value, format_trail, loads_json, quick_count

TIME_BUDGET = 2.0             # seconds per check_code / check_calls call
MAX_OUTPUT_CHARS = 200_000    # of one model answer looked at (the rest is not code anyone runs)
MAX_CALL_TEXT = 1_000_000     # characters of a JSON calls string
MAX_DEPTH = 64                # nesting of calls, arguments, docs, ground truth
MAX_VALUES = 1_000_000        # values in one argument of check_calls
MAX_CALLS = 256               # calls (and expected calls) in one check: pairs are compared
MAX_CHAIN = 128               # tokens at one bracket level between separators
MAX_NESTING = 512             # chains summed over the open brackets (libcst's stack overflows at ~3,500)
CACHE_ENTRIES = 8_192         # parse cache: entries ...
CACHE_CHARS = 4_000_000       # ... and characters of text held, whichever is reached first


class OverBudget(Exception):
    """A check ran out of time; caught at the entry points and made a verdict."""


_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("checker_deadline", default=None)


class deadline:  # noqa: N801  (used as ``with deadline():``)
    """Run the body under a deadline (nested calls keep the earliest one). A class, not a
    contextlib generator: it is entered once per checked output, and the generator's
    machinery cost a tenth of strict mode's time."""

    __slots__ = ("seconds", "token")

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = TIME_BUDGET if seconds is None else seconds  # read now: tests may widen it

    def __enter__(self) -> None:
        limit = time.monotonic() + self.seconds
        current = _DEADLINE.get()
        self.token = _DEADLINE.set(limit if current is None or current > limit else current)

    def __exit__(self, *exc: object) -> None:
        _DEADLINE.reset(self.token)


def remaining() -> float | None:
    """Seconds left before the current check's deadline (None outside a check)."""
    limit = _DEADLINE.get()
    return None if limit is None else max(0.0, limit - time.monotonic())


def check_time() -> None:
    """Raise OverBudget if the current check's deadline has passed (no-op outside a check)."""
    limit = _DEADLINE.get()
    if limit is not None and time.monotonic() > limit:
        raise OverBudget(f"not checked within the time budget ({TIME_BUDGET:g}s)")


# -- check_calls input -----------------------------------------------------------------
def admit_calls(calls: Any) -> tuple[Any, str | None]:
    """(calls decoded from text when they are JSON text, None) or (calls, why not checkable)."""
    if isinstance(calls, (bytes, bytearray)):
        calls = bytes(calls).decode("utf-8", errors="replace")
    if isinstance(calls, str):
        if len(calls) > MAX_CALL_TEXT:
            return calls, f"calls are {len(calls):,} characters; at most {MAX_CALL_TEXT:,} are checked"
        try:
            calls = loads_json(calls, strict_unicode=False)
        except UnsafeDocument as exc:
            return calls, _where(exc, "calls")
        except ValueError:
            pass  # not JSON: the checker says so itself, with the parser's position
    why = _admit_value("calls", calls)
    if why is None:
        listed = calls.get("tool_calls") if isinstance(calls, dict) else calls
        why = _too_many("calls", listed)
    return calls, why


def admit_question(functions: Any, ground_truth: Any) -> str | None:
    """Why the function docs or the ground truth cannot be checked against, or None.

    Called once per compiled question (checker.memo), not once per output: an evaluation
    checks thousands of outputs against the same docs, and walking them every time cost
    three quarters of strict mode's time."""
    if 0 <= quick_count(functions, 0, MAX_DEPTH, False) <= MAX_VALUES \
            and 0 <= quick_count(ground_truth, 0, MAX_DEPTH, False) <= MAX_VALUES:
        return _too_many("ground_truth", ground_truth)  # both within limits (the common case, at once)
    return _admit_value("functions", functions) or _admit_value("ground_truth", ground_truth) \
        or _too_many("ground_truth", ground_truth)


def _admit_value(name: str, value: Any) -> str | None:
    if not isinstance(value, (dict, list, tuple, str, int)):
        return None  # None, floats, ApiRecords (already vetted by the catalog)
    try:
        check_value(value, strict_unicode=False, max_depth=MAX_DEPTH, max_nodes=MAX_VALUES)
    except UnsafeDocument as exc:
        return _where(exc, name)
    return None


def _too_many(name: str, value: Any) -> str | None:
    if isinstance(value, (list, tuple)) and len(value) > MAX_CALLS:
        return f"{name}: {len(value):,} calls; at most {MAX_CALLS} are checked at once"
    return None


def _where(exc: UnsafeDocument, name: str) -> str:
    """``integer of 5,000 digits (at calls[0].arguments.x)``."""
    return f"{exc.reason} (at {format_trail((name, *exc.trail))})"


# -- expression complexity --------------------------------------------------------------
_TOKEN = re.compile(r"""
    (?P<quote>[rbuRBUfF]{0,2}(?:'''|\"\"\"|'|"))
  | (?P<open>[(\[{]) | (?P<close>[)\]}])
  | (?P<op>==|!=|<=|>=|->|:=|\*\*=?|//=?|<<=?|>>=?|[-+*/%@&|^]=)
  | (?P<sep>[,;=\n])
  | (?P<comment>\#[^\n]*)
  | (?P<word>\w+)
  | (?P<other>[^\w\s])
""", re.VERBOSE)
_STRING_END = {q: re.compile(p) for q, p in (("'", r"(?:[^'\\\n]|\\.)*'"), ('"', r'(?:[^"\\\n]|\\.)*"'),
                                           ("'''", r"(?s:.*?)'''"), ('"""', r'(?s:.*?)"""'))}


def too_complex(text: str, limit: int = MAX_CHAIN, nesting: int = MAX_NESTING) -> str | None:
    """Why libcst must not be given ``text``, or None.

    Two measures, over a quick tokenization (strings and comments skipped): the tokens of
    one chain at one bracket level (a bracketed group is one token of the level around
    it; commas, ``=``, semicolons and top-level newlines end a chain), which libcst's
    cost grows with quadratically or worse; and those chains summed over all open
    brackets, which bounds how deeply its recursive parser nests (``-(-(-(...``,
    ``lambda: lambda: ...``: at a few thousand levels it overflows the C stack and the
    process dies). Colons end nothing: ``lambda:`` nests.
    """
    counts = [0]
    total = 0
    pos, n = 0, len(text)
    while pos < n:
        m = _TOKEN.search(text, pos)
        if m is None:
            break
        kind, pos = m.lastgroup, m.end()
        if kind == "quote":
            q = m.group()[-3:] if m.group()[-3:] in ("'''", '"""') else m.group()[-1]
            end = _STRING_END[q].match(text, pos)
            if end:
                pos = end.end()
            else:  # unterminated: a one-line string ends at the line's end, a triple one at the text's
                eol = -1 if len(q) == 3 else text.find("\n", pos)
                pos = n if eol < 0 else eol
        elif kind == "comment":
            continue
        elif kind == "open":  # the group is one operand here; its inside is a new level
            counts.append(0)
            kind = "operand"
        elif kind == "close":
            if len(counts) > 1:
                total -= counts.pop()
            continue
        elif kind == "sep":
            if m.group() != "\n" or len(counts) == 1:
                total -= counts[-1]
                counts[-1] = 0
            continue
        level = -2 if kind == "operand" else -1
        counts[level] += 1
        total += 1
        if counts[level] > limit or total > nesting:
            line = text.count("\n", 0, m.start()) + 1
            what = (f"chains more than {limit} operands and operators" if counts[level] > limit
                    else f"nests more than {nesting} levels")
            return f"an expression {what} (line {line}); not parsed"
    return None


# -- the parse cache -------------------------------------------------------------------
class BoundedCache:
    """A thread-safe LRU cache bounded in entries *and* in characters of key text: model
    outputs of 1 MB each must not turn into a 400 MB cache."""

    def __init__(self, entries: int = CACHE_ENTRIES, chars: int = CACHE_CHARS) -> None:
        self.max_entries, self.max_chars = entries, chars
        self._data: OrderedDict[str, Any] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._data)

    @property
    def chars(self) -> int:
        return self._chars

    def get_or_compute(self, key: str, compute: Callable[[str], Any]) -> Any:
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
        value = compute(key)  # outside the lock: parsing is slow, other threads go on
        if len(key) > self.max_chars:
            return value
        with self._lock:
            if key not in self._data:
                self._data[key] = value
                self._chars += len(key)
                while len(self._data) > self.max_entries or self._chars > self.max_chars:
                    old, _ = self._data.popitem(last=False)
                    self._chars -= len(old)
        return value

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._chars = 0
