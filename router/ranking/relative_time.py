"""A date the request gives relative to now is a step of its own: finding out what now is.

"Help me check the high-speed train tickets from Beijing to Shanghai on next Wednesday" needs the
ticket tools and also a tool that tells the current date: the agent cannot turn "next Wednesday",
"tomorrow" or "the last 24h" into the date a ticket or price tool takes without it. None of the
request's words says so in a catalog's words, so BM25 and the encoder rank the clock far down
(held out, the time tools of LiveMCPBench's relative-date requests sat at ranks 20-230).

So the first expression of a date relative to now ("today", "tomorrow", "next Wednesday", "this
weekend", "the past three days", "two weeks ago") is one more part of the request, like an output
file's (router.ranking.output_file): its span is the expression (what the explanation shows), and it
is ranked by ``WORDS``, what the step does, for BM25 and, through their vector, for the part floor
(RouterConfig.part_floor), which so asks whether a tool resembles a clock, not the expression's words.
One part per request, however many such expressions: the step is the same for all of them. It takes
no part in coverage or abstention (router.ranking.shaping), and its tool goes after the first places
(router.ranking.part_tools), so the best tools of the request never move. "Recent", "latest" and
"current" are left out: they ask a data tool for its newest rows, not the agent for a date. On or
off is RouterConfig.relative_time, chosen by `toolsift bench routing --only companions`
(docs/routing.md).
"""
from __future__ import annotations

import re

__all__ = ["WORDS", "relative_date", "with_relative_date"]

# what the step does, in the words clock tools are named and described with
WORDS = "get the current date and time"

# a count before its unit: digits ("24h", "3 days") or a word ("three days", "a few weeks")
_COUNT = r"(?:\d+\s*|(?:a\s+few|a\s+couple\s+of|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|" \
         r"twelve|fifteen|twenty|thirty|few|several)\s+)"
_UNITS = r"(?:h|hrs?|hours?|days?|weeks?|months?|years?|quarters?)"
# a single day or span that "next", "last", "this", ... place relative to now
_ONE = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|hour|day|week|weekend|month|year|quarter|" \
       r"morning|afternoon|evening|night)"
_RELATIVE = re.compile(
    rf"\b(?:today|tonight|tomorrow|yesterday|near\s+future|"
    rf"(?:next|last|past|coming|previous|this)\s+{_ONE}|"
    rf"(?:next|last|past|coming|previous)\s+(?:{_COUNT}{_UNITS}|hours|days|weeks|months|years)|"
    rf"{_COUNT}{_UNITS}\s+ago|in\s+{_COUNT}{_UNITS})\b", re.IGNORECASE)


def relative_date(query: str) -> tuple[int, int] | None:
    """(start, end) of the request's first date relative to now, None when it gives none."""
    m = _RELATIVE.search(query)
    return m.span() if m else None


def with_relative_date(query: str, spans: list[tuple[int, int]], words: list[str | None] | None
                       ) -> tuple[list[tuple[int, int]], list[str | None] | None]:
    """The request's parts (and the words each is ranked by, None: its own text) with the part of its
    relative date added, ranked by ``WORDS``; unchanged when it gives none. A request cut into no parts
    becomes two: the whole request, and the date."""
    date = relative_date(query)
    if date is None:
        return spans, words
    if not spans:
        start = len(query) - len(query.lstrip())
        spans, words = [(start, len(query.rstrip()))], None
    return list(spans) + [date], (words or [None] * len(spans)) + [WORDS]
