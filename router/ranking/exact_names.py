"""Exact names win: a query that names a tool gets that tool at rank 1.

Users ask for this plainly (docs/routing.md): "call get_weather", "use YituTech/conv-bert-base",
"run bing-cn-mcp__bing_search". BM25 usually finds such a tool, but not always first: a long name
splits into common words that other tools share, and the dense side does not read identifiers.

A name matches when the query holds it as consecutive words, whatever the spelling of the
separators and the case: ``get_weather``, ``get weather``, ``GetWeather``, ``get.weather`` and
``get-weather`` are one name. Each record answers to every name a user may know it by: its name,
its OpenAI-safe name, its record id (with and without the namespace), ``namespace__name`` (the MCP
gateway's qualified names), ``namespace.name`` and, for RapidAPI endpoints, ``tool api``
("TheClique Songkick concert"). A name is only looked for when it is distinctive: two words or
more and at least 6 letters, or one word of 8 letters or more. "search", "weather" or "translate"
are words a request uses without naming a tool, and the ranking already serves them. A name
that several records answer to names none of them (see `NameTable`).

Cost: the name table is built once per router (lazy; a live router builds it in its watcher
thread). The normalized names of each record are remembered across tables (``memo``), so a replica
that swaps in a new router after a catalog change re-normalizes only the records that changed; from
scratch, 20k records take ~0.23 s CPU (it was 1.9 s before the pieces of composite names were split
once and the collector paused). A query is matched with one dict lookup per window of up to
``MAX_NAME_WORDS`` consecutive words, over its first ``MAX_QUERY_WORDS`` words.
"""
from __future__ import annotations

import gc
import re
from typing import Callable, Iterable, Sequence

from apidb.record import ApiRecord

_CAMEL1 = re.compile(r"([a-z0-9])([A-Z])")
_CAMEL2 = re.compile(r"([A-Z]+)([A-Z][a-z])")
_PART = re.compile(r"[^\W_]+")
_ID_SUFFIX = re.compile(r"~[0-9a-f]{6,}$")  # loaders make ids unique with ~<hash>: not part of a name

MAX_NAME_WORDS = 10      # longest name (in words) looked for in a query
MAX_QUERY_WORDS = 600    # a conversation query is capped: the last user turn comes first (router.ranking.query)
MIN_MULTI_CHARS = 6      # a name of several words needs at least this many letters ...
MIN_SINGLE_CHARS = 8     # ... and a one-word name at least this many


def name_parts(text: str) -> list[str]:
    """The lower-cased words of a name or a query: separators, case changes and punctuation split."""
    lower = text.lower()
    if lower == text:  # no capital, so no case change to split at (most names): the regexes would do nothing
        return _PART.findall(text)
    return _PART.findall(_CAMEL2.sub(r"\1 \2", _CAMEL1.sub(r"\1 \2", text)).lower())


def _key(parts: Sequence[str]) -> str:
    return "".join(parts)


NameMemo = dict  # record id -> (the record, its distinctive names as (key, first word, words))


def record_names(rec: ApiRecord, parts_of: Callable[[str], list[str]] = name_parts) -> list[tuple[str, str, int]]:
    """``rec``'s distinctive names (the module doc lists them), normalized: (lookup key, first word,
    number of words). A name is distinctive with two words or more and at least MIN_MULTI_CHARS
    letters, or one word of MIN_SINGLE_CHARS letters or more.

    Composite names are put together from their pieces' words (``namespace__name`` has the words
    of the namespace, then those of the name: separators never join words across them), so with
    a memoized ``parts_of`` a namespace or tool shared by many records is split once."""
    md = rec.metadata or {}
    ns, name = parts_of(rec.namespace), parts_of(rec.name)
    ids = _ID_SUFFIX.sub("", rec.id)
    prefix, slash, local = ids.partition("/")
    local_parts = parts_of(local if slash else ids)
    forms = [name, parts_of(rec.openai_name()), local_parts, ns + name,
             parts_of(prefix) + local_parts if slash else local_parts]
    tool, api = md.get("tool_name") or md.get("tool"), md.get("api_name")
    # a RapidAPI endpoint's own name ("ZIP code", "Get Word") is a phrase requests use without
    # naming the endpoint; with its API's name in front it names one endpoint
    if isinstance(api, str) and api and isinstance(tool, str) and tool:
        forms.append(parts_of(tool) + parts_of(api))
    out, seen = [], set()
    for parts in forms:
        n = len(parts)
        if not parts or n > MAX_NAME_WORDS:
            continue
        key = _key(parts)  # its length is the name's letter count: `distinctive` without a second pass
        if key not in seen and len(key) >= (MIN_MULTI_CHARS if n >= 2 else MIN_SINGLE_CHARS):
            seen.add(key)
            out.append((key, parts[0], n))
    return out


class NameTable:
    """Normalized name → record positions, for one router's records."""

    def __init__(self, records: Iterable[ApiRecord], memo: NameMemo | None = None) -> None:
        # ~100k small lists and tuples at 20k records: with the collector on, its passes over the
        # records already loaded cost more than the build (0.68 s vs 0.26 s CPU, measured)
        enabled = gc.isenabled()
        gc.disable()
        try:
            self._build(records, memo)
        finally:
            if enabled:
                gc.enable()

    def _build(self, records: Iterable[ApiRecord], memo: NameMemo | None) -> None:
        self.by_key: dict[str, list[int]] = {}
        self.longest = 1
        # first word of a name -> the most words a name starting with it has: a query word that starts
        # no name costs one dict lookup, not one per window length
        self.starts: dict[str, int] = {}
        old = memo or {}
        self.memo: NameMemo = {}
        split: dict[str, list[str]] = {}  # namespaces and tool names repeat: each is split once

        def parts_of(text: str) -> list[str]:
            got = split.get(text)
            if got is None:
                got = split[text] = name_parts(text)
            return got

        for i, rec in enumerate(records):
            seen = old.get(rec.id)
            # records are immutable: the same object has the same names (a changed record is a new object)
            names = seen[1] if seen is not None and seen[0] is rec else record_names(rec, parts_of)
            self.memo[rec.id] = (rec, names)
            for key, first, n in names:
                hits = self.by_key.setdefault(key, [])
                if i not in hits:
                    hits.append(i)
                if n > self.starts.get(first, 1):
                    self.starts[first] = n
                if n > self.longest:
                    self.longest = n

        # a name several records answer to ("mobilenet_v2" for two TF Hub models, "search" on two
        # MCP servers) names none of them: the user has to qualify it (server__tool, the full id)
        self.by_key = {key: hits for key, hits in self.by_key.items() if len(hits) == 1}

    def find(self, query: str) -> list[int]:
        """Positions of the records the query names, in the order the query names them.

        Longest match first: where "get_weather_forecast" and "get_weather" both match at the
        same place, only the longer one counts, and its words are not matched again.
        """
        words = name_parts(query)[:MAX_QUERY_WORDS]
        found: list[int] = []
        i, starts = 0, self.starts
        while i < len(words):
            step, longest = 1, starts.get(words[i], 0)
            for n in range(min(longest, len(words) - i), 0, -1):
                hits = self.by_key.get(_key(words[i:i + n]))
                if hits:
                    found += [h for h in hits if h not in found]
                    step = n
                    break
            i += step
        return found
