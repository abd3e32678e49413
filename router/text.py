"""How a record becomes text: per-field text for BM25, one passage for the embedder.

Identifiers are split into words (``get_weather_by_coords`` → get weather by coords,
``getWeatherByCoords`` too) so that a user's words meet a tool's name. Field weights
are applied by repeating a field's tokens (a cheap BM25F approximation); the values in
``DEFAULT_FIELD_WEIGHTS`` were chosen on data by benchmarks/router_targets.py (see there).
"""
from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path
from typing import Any, Iterable

from apidb.record import ApiRecord

_CAMEL1 = re.compile(r"([a-z0-9])([A-Z])")
_CAMEL2 = re.compile(r"([A-Z]+)([A-Z][a-z])")
_WORD = re.compile(r"[^\W_]+")

# Metadata keys that carry topical words (domain, category, the tool an endpoint belongs to).
TAG_KEYS = ("domain", "domains", "functionality", "category", "category_name", "tool_name", "tool",
            "tool_description", "tags", "framework", "server", "title", "summary")

# Chosen by the grid in benchmarks/router_targets.py on the dev half of StableToolBench + APIBench
# (hybrid dev objective: name 1 0.61790, name 3 0.61785 — within the grid's 0.001 margin, so the
# shipped 3 stays —, name 2 0.616; among BM25-only rows dropping the params field costs ~0.01;
# see RouterConfig for the fusion part).
DEFAULT_FIELD_WEIGHTS: dict[str, int] = {"name": 3, "namespace": 1, "description": 1, "params": 1,
                                         "tags": 1, "call": 1}

_REQUEST_WORDS = frozenset("what how which who whom can could would should please want need like help "
                           "also me my i you your us our i'm".split())
_MAX_FIELD_CHARS = 4000  # a README pasted into a description must not drown the other fields
_HASH_SUFFIX = re.compile(r"~[0-9a-f]{6,}$")  # loaders make ids unique with ~<hash>; not a word


def split_identifier(text: str) -> str:
    """``getWeather_byCoords`` → ``get Weather by Coords`` (case kept; tokenize lowers it)."""
    text = _CAMEL2.sub(r"\1 \2", _CAMEL1.sub(r"\1 \2", text))
    return " ".join(_WORD.findall(text))


# bm25s' STOPWORDS_EN (Lucene's English stop set, bm25s 0.3.16, MIT), copied: importing bm25s to
# read it imported numba and scipy (~0.55 s of a fresh `toolsift route`), and a list that changed
# with a bm25s upgrade would silently differ from the one an existing index was built with.
# tests/router/test_lexical_budget_explain.py checks it is still bm25s' list.
STOPWORDS_EN = frozenset(("a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is",
                          "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there",
                          "these", "they", "this", "to", "was", "will", "with"))


@functools.lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    # Request phrasing ("can you help me", "I want") carries no tool meaning.
    return STOPWORDS_EN | _REQUEST_WORDS


@functools.lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


def words(text: str) -> list[str]:
    """Lower-cased words of ``text`` with identifiers split, stop words dropped (unstemmed)."""
    stop = _stopwords()
    return [w for w in _WORD.findall(split_identifier(text).lower()) if w not in stop]


def tokenize(text: str) -> list[str]:
    """BM25 tokens: ``words`` stemmed (Porter/Snowball English)."""
    ws = words(text)
    return _stemmer().stemWords(ws) if ws else []


def stem_words(ws: list[str]) -> list[str]:
    """The stems of already-split words (as `tokenize` stems them)."""
    return _stemmer().stemWords(ws) if ws else []


def stem_map(text: str) -> dict[str, str]:
    """stem → first original word, to report matched terms in the user's own words."""
    out: dict[str, str] = {}
    ws = words(text)
    for w, s in zip(ws, _stemmer().stemWords(ws) if ws else []):
        out.setdefault(s, w)
    return out


def _flatten(value: Any, limit: int = 40) -> list[str]:
    """Strings inside a metadata value (str, list, dict values), at most ``limit`` of them."""
    out: list[str] = []
    stack = [value]
    while stack and len(out) < limit:
        v = stack.pop(0)
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
    return out


def _param_text(schema: dict[str, Any] | None) -> str:
    """Parameter names (split) and descriptions, one level of nesting deep."""
    parts: list[str] = []
    props = (schema or {}).get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return ""
    for name, spec in props.items():
        parts.append(split_identifier(str(name)))
        if isinstance(spec, dict):
            if isinstance(spec.get("description"), str):
                parts.append(spec["description"])
            if isinstance(spec.get("enum"), list):
                parts.extend(str(e) for e in spec["enum"][:20])
            inner = spec.get("properties")
            if isinstance(inner, dict):
                parts.extend(split_identifier(str(k)) for k in inner)
    return " ".join(parts)


def record_fields(record: ApiRecord) -> dict[str, str]:
    """The text of each field of a record (name, namespace, description, params, tags, call)."""
    meta = record.metadata or {}
    tags = [s for key in TAG_KEYS if key in meta for s in _flatten(meta[key])]
    extra = meta.get("descriptions")
    description = record.description or ""
    if isinstance(extra, list):  # merged duplicates keep every distinct description
        description = " ".join([description, *[str(d) for d in extra if d != record.description]])
    local = record.id.split("/", 1)[1] if "/" in record.id else record.id
    # The name a model calls, plus the id's local part and any display name, without repeats.
    name_words: dict[str, str] = {}
    for source in (record.name, str(meta.get("api_name") or ""), _HASH_SUFFIX.sub("", local)):
        for w in split_identifier(source).split():
            name_words.setdefault(w.lower(), w)
        for raw in _WORD.findall(source):  # "HarDNet" is also searched as "hardnet"
            if raw.lower() not in name_words and raw != raw.lower() and not raw.isupper():
                name_words.setdefault(raw.lower(), raw)
    name = " ".join(name_words.values())
    fields = {
        "name": name,
        "namespace": split_identifier(record.namespace),
        "description": description,
        "params": _param_text(record.parameters),
        "tags": " ".join(tags),
        "call": split_identifier(record.call or ""),
    }
    return {k: v[:_MAX_FIELD_CHARS] for k, v in fields.items()}


def record_tokens(record: ApiRecord, weights: dict[str, int] | None = None) -> list[str]:
    """BM25 document tokens: each field's tokens repeated ``weights[field]`` times."""
    weights = DEFAULT_FIELD_WEIGHTS if weights is None else weights
    out: list[str] = []
    for field, text in record_fields(record).items():
        w = int(weights.get(field, 0))
        if w > 0 and text:
            out.extend(tokenize(text) * w)
    return out


def record_passage(record: ApiRecord) -> str:
    """The one passage the embedder sees: name words, where it lives, what it does, its inputs.

    MiniLM reads at most 256 word pieces, so the most telling text comes first.
    """
    f = record_fields(record)
    head = f["name"]
    if f["tags"]:
        head += f" ({f['tags'][:200]})"
    parts = [head + ":", f["description"][:600]]
    if f["params"]:
        parts.append("Parameters: " + f["params"][:300])
    return " ".join(p for p in parts if p)


@functools.lru_cache(maxsize=1)
def rules_fingerprint() -> str:
    """A hash of this module's source: how records become tokens and passages. An index records it,
    so that (record id, content hash, this) identifies every passage and BM25 document without
    rendering 20k passages at load time (router.index); any edit here makes it differ."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


_TOKENS_MAX = 200_000
_EMBEDDING_KEYS: dict[str, str] = {}


def embedding_key(record: ApiRecord) -> str:
    """What a record's vector is cached under: a hash of the passage the embedder reads.

    The passage follows from the record's content *and* from how this module renders it,
    so a change to `record_passage` re-embeds the records it affects instead of silently
    reusing vectors of the old text. Memoized by content hash (fixed within a process).
    """
    key = _EMBEDDING_KEYS.get(record.content_hash)
    if key is None:
        if len(_EMBEDDING_KEYS) >= _TOKENS_MAX:
            _EMBEDDING_KEYS.clear()
        digest = hashlib.sha256(record_passage(record).encode("utf-8")).hexdigest()
        key = _EMBEDDING_KEYS[record.content_hash] = "p" + digest
    return key


_TOKENS: dict[tuple[str, tuple], list[str]] = {}


def batch_tokens(records: Iterable[ApiRecord], weights: dict[str, int] | None = None) -> list[list[str]]:
    """Tokens of many records, memoized by (content hash, weights): routers rebuilt for
    overlapping tool lists (the middleware's case) tokenize each tool once."""
    key_w = tuple(sorted((weights or DEFAULT_FIELD_WEIGHTS).items()))
    out = []
    for r in records:
        key = (r.content_hash, key_w)
        toks = _TOKENS.get(key)
        if toks is None:
            if len(_TOKENS) >= _TOKENS_MAX:
                _TOKENS.clear()
            toks = _TOKENS[key] = record_tokens(r, weights)
        out.append(toks)
    return out
