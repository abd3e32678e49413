"""Matched terms: which of the query's content words a selected tool's text contains, and where.

BM25 keeps every word that is not one of its 33 stop words, so its own matches included
fragments that explain nothing (issue 14: ``s`` from "what's", ``going``, ``from``, ``one``).
An explanation keeps only content words: no stop words of a fuller English list, no request
phrasing, no one-letter fragments. Each is reported in the user's spelling with the fields of
the tool it hit (name, namespace, description, params, tags, call), using the same stemming and
field texts the BM25 index was built from (router.text), so a term listed here is a term that
scored. Ranking is unchanged: this list is for people reading the explanation.
"""
from __future__ import annotations

from apidb.record import ApiRecord

from .. import text as rtext

# Function words and chat phrasing beyond BM25's short list (router.text.STOPWORDS_EN): they
# match almost every description, so listing them as the reason a tool was picked misleads.
EXPLAIN_STOPWORDS = frozenset("""
about above after again against all am any aren't because been before being below between both
cannot could couldn't did didn't do does doesn't doing don't down during each few from further get
gets getting give given go goes going gonna got had hadn't has hasn't have haven't having he her
here hers herself him himself his how i'd i'll i've its itself just know let let's lets like make
more most much must mustn't myself need needs nor now off once one ones only other ought ours
ourselves out over own really same say she should shouldn't show so some something tell than
thanks that's theirs them themselves there's they'd they'll they're they've those through thing
things too try under until up upon use using very wanna want wants wasn't we we'd we'll we're we've
were weren't what's when where whether while who's why won't would wouldn't yes yet you'd you'll
you're you've yours yourself yourselves
""".split())


def content_words(query: str) -> dict[str, str]:
    """stem -> the query's first word with that stem, for the words worth explaining."""
    out: dict[str, str] = {}
    words = [w for w in rtext.words(query) if len(w) > 1 and w not in EXPLAIN_STOPWORDS]
    if not words:
        return out
    for w, s in zip(words, rtext.stem_words(words)):
        out.setdefault(s, w)
    return out


_FIELD_TOKENS: dict[tuple[str, tuple], list[tuple[str, frozenset[str]]]] = {}
_FIELD_TOKENS_MAX = 50_000  # records; a long-lived server explains the same tools again and again


def field_tokens(record: ApiRecord, field_weights: dict[str, int] | None = None) -> list[tuple[str, frozenset[str]]]:
    """(field, its BM25 tokens) for the record's fields the index weights above 0, memoized by
    content hash: rendering and stemming a record's fields was most of an explanation's cost
    (~0.1 ms per tool, profile of Router.select at 20k tools)."""
    weights = rtext.DEFAULT_FIELD_WEIGHTS if field_weights is None else field_weights
    key = (record.content_hash, tuple(sorted(weights.items())))
    out = _FIELD_TOKENS.get(key)
    if out is None:
        if len(_FIELD_TOKENS) >= _FIELD_TOKENS_MAX:
            _FIELD_TOKENS.clear()
        out = _FIELD_TOKENS[key] = [(name, frozenset(rtext.tokenize(text)))
                                    for name, text in rtext.record_fields(record).items()
                                    if weights.get(name, 0) > 0 and text]
    return out


def matched_fields(stems: dict[str, str], record: ApiRecord, field_weights: dict[str, int] | None = None,
                   fields: list[tuple[str, frozenset[str]]] | None = None) -> dict[str, list[str]]:
    """word -> the record's fields that contain it (fields the index gives weight 0 are skipped).
    ``fields``: the record's `field_tokens`, when the caller keeps them."""
    hits: dict[str, list[str]] = {}
    for name, tokens in field_tokens(record, field_weights) if fields is None else fields:
        for stem, word in stems.items():
            if stem in tokens:
                hits.setdefault(word, []).append(name)
    order = list(stems.values())  # the query's word order
    return {w: hits[w] for w in order if w in hits}
