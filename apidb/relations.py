"""Relations between the tools of a catalog: which tools a task that uses one tends to need too.

A multi-step request ("find Sofia Coppola, then count the films she directed") needs several tools,
and the second is often one its words barely name: an endpoint that takes ``person_id`` needs the one
that finds the person first. Four kinds of relation are read from what the catalog already says,
and one from use:

- ``same_api``: tools of one API, one MCP server, one ToolBench tool (``tool_name`` / ``server`` /
  ``tool`` in the record's metadata) — the endpoints of one service a task often combines;
- ``same_category``: tools of one category or collection (ToolBench ``category_name``, an MCP
  server's ``category``) — where ToolBench's multi-tool tasks come from;
- ``produces_for``: a tool that yields an identifier another tool takes — ``GET /search/person`` for
  ``GET /person/{person_id}/movie_credits``: a required ``<thing>_id`` parameter (or ``{id}`` under a
  ``/<things>/`` path segment) and, in the same API, an endpoint that searches or lists ``<thing>``
  without needing its id; ``/me`` for a ``user_id``; a bare ``/search`` for every id of its API;
  and, where the catalog says it, a required parameter whose description names the endpoint that
  yields it, by path or by name ("`dest_id` can be retrieved from `api/v1/hotels/searchDestination`",
  "id item from the Get Languages API", "retrieved from 'resolve-library-id'");
- ``feeds``: where the catalog says what a tool returns (``output_fields``: ToolBench
  ``template_response``, NESTful ``output_parameters``; an MCP ``outputSchema``), a tool of the same
  API whose output has a field named as another's required parameter and that does not take that
  parameter itself (``dest_id`` from a destination search for a hotel search). A kind of its own, not
  more ``produces_for``: it is weighted apart, chosen on the labelled sets that say what tools return;
- ``co_use``: tools called for one request, learned from call sequences (the usage log, or labelled
  multi-call answers), stored in the catalog (`apidb.catalog.Catalog.co_use`).

The structural kinds are derived from the records each time a router is built, so they are always
current with the catalog; co-use pairs naming a record the catalog no longer has are ignored.
"""
from __future__ import annotations

import itertools
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Iterable, Sequence

from .loaders.common import field_names
from .record import ApiRecord

__all__ = ["KINDS", "MIN_CO_USE", "Relation", "api_key", "category_key", "co_use_pairs", "output_fields",
           "producer_links"]

KINDS = ("same_api", "same_category", "produces_for", "feeds", "co_use")
_API_KEYS = ("tool_name", "server", "tool")
_CATEGORY_KEYS = ("category_name", "category")
_PATH_PARAM = re.compile(r"\{(\w+)\}")
_WORD = re.compile(r"[a-z0-9]+")
_CLAUSE = re.compile(r"[,;:!?()\[\]\n]|\.(?:\s|$)")
# name words that say a tool finds or lists things, so its results carry their ids
_FINDERS = {"search", "find", "list", "lookup", "query", "all", "popular", "top", "browse", "discover"}
_SEARCHERS = {"search", "find", "lookup"}  # these take the thing's name: the surest way to its id


@dataclass(frozen=True)
class Relation:
    """``target`` is a likely companion of ``source`` (a tool a request using ``source`` also needs)."""

    source: str
    target: str
    kind: str
    strength: float


def api_key(rec: ApiRecord) -> str | None:
    """The API / server / tool a record belongs to, within its namespace (None: not said)."""
    md = rec.metadata or {}
    value = next((md[k] for k in _API_KEYS if md.get(k)), None)
    return None if value is None else f"{rec.namespace}\x1f{value}"


def category_key(rec: ApiRecord) -> str | None:
    md = rec.metadata or {}
    value = next((md[k] for k in _CATEGORY_KEYS if md.get(k)), None)
    return None if value is None else f"{rec.namespace}\x1f{value}"


def output_fields(rec: ApiRecord) -> set[str]:
    """The field names (lower-cased) a record says its output carries: the loaders' ``output_fields``,
    else the fields of an MCP ``output_schema``; empty when the catalog does not say."""
    md = rec.metadata or {}
    fields = md.get("output_fields")
    if not isinstance(fields, list):
        fields = field_names(md.get("output_schema")) if isinstance(md.get("output_schema"), dict) else []
    return {f.lower() for f in fields if isinstance(f, str)}


def _inputs(rec: ApiRecord) -> tuple[set[str], list[str]]:
    """A record's parameter names and its required ones, lower-cased."""
    params = rec.parameters if isinstance(rec.parameters, dict) else {}
    props = params.get("properties") if isinstance(params.get("properties"), dict) else {}
    required = params.get("required") if isinstance(params.get("required"), list) else []
    return {str(n).lower() for n in props}, [n.lower() for n in required if isinstance(n, str)]


def _fed(members: Sequence[ApiRecord]) -> list[Relation]:
    """``feeds`` relations (module doc): ``consumer -> producer`` when one of the
    consumer's required parameters is a field of the producer's output the producer does not take.
    A bare ``id`` is left out: every record of an API returns one, and it does not say of what."""
    by_field: dict[str, list[int]] = defaultdict(list)
    inputs = [_inputs(r) for r in members]
    for j, r in enumerate(members):
        for f in output_fields(r):
            if f not in inputs[j][0]:  # a field the tool also takes is an echo, not a product
                by_field[f].append(j)
    if not by_field:
        return []
    out = []
    for i, consumer in enumerate(members):
        for name in inputs[i][1]:
            if name == "id":
                continue
            out += [Relation(consumer.id, members[j].id, "feeds", 1.0) for j in by_field.get(name, ()) if j != i]
    return out


def _names(rec: ApiRecord) -> list[tuple[str, ...]]:
    """The word sequences a parameter's description can name a record by: its path and its names
    (the function name, ToolBench ``api_name``, OpenAPI ``summary``), two words at least: one word
    ("search") names nothing in particular."""
    md = rec.metadata or {}
    path = str(md.get("path") or "")
    # a path by its literal segments and parameters ("/albums/{id}/tracks"); one literal segment and
    # an id ("/artists/{id}": "artist ID") is how descriptions talk of the thing, not of the endpoint
    literal = [s for s in path.strip("/").split("/") if s and not _PATH_PARAM.fullmatch(s)]
    names = [path] if len(literal) >= 2 else []
    names += [n for n in (rec.name, md.get("api_name"), md.get("summary")) if isinstance(n, str)]
    return list(dict.fromkeys(n for n in (tuple(_words(x)) for x in names) if len(n) >= 2))


def _described(members: Sequence[ApiRecord]) -> list[Relation]:
    """``produces_for`` relations a consumer's parameter descriptions state: a required parameter
    whose description names another record of the API ("`dest_id` can be retrieved from
    `api/v1/hotels/searchDestination`") that does not take that parameter itself.

    The same kind as the name rule's links, not one of its own: it is the relation the name rule
    guesses at, said outright, and the labelled sets hold too few such descriptions (StableToolBench
    54 links, LiveMCPBench 12, the others none) to weigh a kind apart."""
    by_start: dict[tuple[str, str], list[tuple[tuple[str, ...], int]]] = defaultdict(list)
    for j, r in enumerate(members):
        for n in _names(r):
            by_start[n[:2]].append((n, j))
    inputs = [_inputs(r) for r in members]
    out = []
    for i, consumer in enumerate(members):
        params = consumer.parameters if isinstance(consumer.parameters, dict) else {}
        props = params.get("properties") if isinstance(params.get("properties"), dict) else {}
        for key, spec in props.items():
            name = str(key).lower()
            if name not in inputs[i][1] or not isinstance(spec, dict):
                continue
            # a name never runs across punctuation: "album, track" is a list, not /albums/{id}/tracks
            for chunk in _CLAUSE.split(str(spec.get("description") or "")[:2000]):
                words = _words(chunk)
                for at in range(len(words) - 1):
                    for n, j in by_start.get((words[at], words[at + 1]), ()):
                        if j != i and tuple(words[at:at + len(n)]) == n and name not in inputs[j][0]:
                            out.append(Relation(consumer.id, members[j].id, "produces_for", 1.0))
    return out


def _stem(word: str) -> str:
    w = word.lower()
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    for suffix in ("es", "s"):
        if w.endswith(suffix) and len(w) > 3 and not w.endswith("ss"):
            return w[:-len(suffix)]
    return w


def _words(text: str) -> list[str]:
    return [_stem(w) for w in _WORD.findall(re.sub(r"([a-z])([A-Z])", r"\1 \2", text).lower().replace("_", " "))]


def _needed_things(rec: ApiRecord) -> set[str]:
    """The things whose id a record needs: required ``<thing>_id`` parameters, and ``{id}`` path
    parameters named after the path segment before them (``/artists/{id}`` needs an artist)."""
    params = rec.parameters if isinstance(rec.parameters, dict) else {}
    required = params.get("required") if isinstance(params.get("required"), list) else []
    things = set()
    for name in required:
        if isinstance(name, str) and re.fullmatch(r"[A-Za-z]+_?[iI][dD]s?", name) and len(name) > 3:
            things.add(_stem(re.sub(r"_?[iI][dD]s?$", "", name)))
    path = str((rec.metadata or {}).get("path") or "")
    segments = path.strip("/").split("/") if path else []
    for i, seg in enumerate(segments):
        m = _PATH_PARAM.fullmatch(seg)
        if not m:
            continue
        name = m.group(1)
        if name.lower().endswith("_id"):
            things.add(_stem(name[:-3]))
        elif name.lower() == "id" and i > 0 and not _PATH_PARAM.fullmatch(segments[i - 1]):
            things.add(_stem(segments[i - 1]))
    return {t for t in things if t}


def producer_links(records: Sequence[ApiRecord]) -> list[Relation]:
    """``produces_for`` relations: for each record that needs a thing's id, the records of the same
    API that find or list that thing without needing its id, and those its parameter descriptions
    name; and ``feeds`` relations: those whose declared output has a field it requires (module doc).
    All stay within one API."""
    by_api: dict[str, list[ApiRecord]] = defaultdict(list)
    for r in records:
        by_api[api_key(r) or r.namespace].append(r)
    out: list[Relation] = []
    for members in by_api.values():
        if len(members) < 2 or len(members) > 2000:  # one flat namespace of thousands says nothing
            continue
        info = []
        for r in members:
            path = str((r.metadata or {}).get("path") or "")
            literal = [_stem(s) for s in path.strip("/").split("/") if s and not _PATH_PARAM.fullmatch(s)]
            method = str((r.metadata or {}).get("method") or "GET").upper()
            info.append((r, _needed_things(r), set(_words(r.name)) | set(literal), literal, method))
        # a producer of a thing has the thing among its words, or is a bare /search or /me: index
        # them by word so a consumer looks only at those (a 2,000-endpoint API stays milliseconds)
        by_word: dict[str, list[int]] = defaultdict(list)
        generic = []
        for j, (_, _, p_words, literal, _) in enumerate(info):
            for w in p_words:
                by_word[w].append(j)
            if literal in (["search"], ["me"]):
                generic.append(j)
        for consumer, needs, _, _, _ in info:
            for thing in needs:
                for j in dict.fromkeys(by_word.get(thing, []) + generic):
                    producer, p_needs, p_words, literal, method = info[j]
                    if producer.id == consumer.id or thing in p_needs or method != "GET":
                        continue
                    if literal == ["search"] or literal == ["me"] and thing == "user":
                        strength = 0.7 if literal == ["search"] else 1.0
                    elif thing in p_words and (p_words & _FINDERS):
                        strength = 1.0 if p_words & _SEARCHERS else 0.7
                    elif thing in p_words and literal and literal[-1] == thing:
                        strength = 0.7  # GET /things: a listing
                    else:
                        continue
                    out.append(Relation(consumer.id, producer.id, "produces_for", strength))
        out += _fed(members) + _described(members)
    best: dict[tuple[str, str, str], Relation] = {}
    for rel in out:
        key = (rel.source, rel.target, rel.kind)
        if key not in best or rel.strength > best[key].strength:
            best[key] = rel
    return list(best.values())


# A pair called together once says little: on the labelled sets, pairs seen once lowered Seal-Tools'
# multi-tool all-gold@10 (0.705 -> 0.627, the other half's pairs), pairs seen twice or more did not.
MIN_CO_USE = 2


def co_use_pairs(call_sets: Iterable[Iterable[str]], min_count: int = MIN_CO_USE) -> list[Relation]:
    """``co_use`` relations from sets of tools called for one request each: the strength of (a, b)
    is count(a and b) / sqrt(count(a) x count(b)) (cosine of their call vectors), both directions;
    a pair called together fewer than ``min_count`` times is left out."""
    single: Counter[str] = Counter()
    pair: Counter[tuple[str, str]] = Counter()
    for calls in call_sets:
        tools = sorted(set(calls))
        single.update(tools)
        pair.update(itertools.permutations(tools, 2))
    return [Relation(a, b, "co_use", round(n / math.sqrt(single[a] * single[b]), 4))
            for (a, b), n in sorted(pair.items()) if n >= min_count]
