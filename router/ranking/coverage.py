"""Complete sets for multi-tool requests: the best tool for each part of a request.

A request such as "Find a 7-letter word that starts with 'fru'. Additionally, fetch the income
data for ZIP code 98765" needs two tools. One query vector and one BM25 pass rank the tools of the
part with the most words first, and the top five can all be near-duplicates serving that part
(COLT, "completeness-oriented tool retrieval", calls this the completeness problem).

The request is cut into parts (sentences, and clauses joined by "additionally", "and then",
"also", ...: `clause_spans`). Each candidate of the fused ranking gets a relevance per part, from
the same two signals as the whole ranking — BM25 of the part's words and the cosine of the
part's vector (pooled from the one encoder pass over the whole request, router.encoders.dense
``encode_with_spans``) —, each min-max normalized over the candidates and weighted like the
fusion. The final order is chosen greedily (xQuAD, Santos et al. 2010, with the parts as the
aspects): the next tool maximizes

    (1 - lam) * rel(d) + lam * sum_p  w_p * rel_p(d) * prod_{s chosen} (1 - rel_p(s))

where rel(d) is the fused score over the top one and w_p = 1 / (number of parts): every part
counts the same, however many words it has. A part whose best tool is already chosen stops pulling its near-duplicates up, so the
next places go to the parts not yet served. ``lam`` = 0 gives the fused ranking unchanged.
Single-part requests are never touched.

Only the top ``pool`` candidates are re-ordered (the rest keep their order after them), so the cost
is a few small matrix operations per request; the BM25 of each part is summed over the catalog
(about 0.1 ms per part at 20k tools).
"""
from __future__ import annotations

import re
from typing import Collection

import numpy as np

from .query import cuts

# Sentence ends, new lines, and the connectives people chain requests with. A clause starting
# with one of these is a new part; "and" alone is not (it joins objects of one request too often:
# "flights and hotels in Rome"): only the rules below cut at an "and".
_CUT = re.compile(r"(?<=[.?!;])\s+|\s*\n\s*|,?\s+\b(?:and then|and also|then|also|additionally|furthermore|"
                  r"moreover|as well as|in addition|besides that|after that|plus)\b[,:]?\s*", re.IGNORECASE)
# the same connectives opening a sentence ("... 'fru'. Additionally, fetch ...") are not part of it
_LEAD = re.compile(r"(?:and then|and also|then|also|additionally|furthermore|moreover|in addition|besides that|"
                   r"after that|plus)\b[,:]?\s*", re.IGNORECASE)
# Verbs that open a request ("... and give me ...") when an object follows them; the object keeps
# noun lists whole ("songs and plays of the artist": "plays" is followed by "of", not an object).
_VERBS = ("add|analy[sz]e|book|calculate|check|compare|compile|convert|create|describe|download|draft|"
          "email|estimate|explain|export|extract|fetch|find|generate|get|give|identify|list|locate|look up|"
          "make|notify|offer|open|play|post|predict|provide|read|recommend|remind|remove|retrieve|save|"
          "schedule|search|send|set|share|show|suggest|summari[sz]e|tell|translate|update|upload|write")
_OBJECT = ("me|us|it|them|the|a|an|some|any|all|my|our|your|this|that|these|those|its|their|his|her|how|"
           "what|which|where|when|who|whether|if|out|up|more|\\d")
# Each rule: the cuts it adds (the text a match covers is dropped; lookaheads keep the next part's
# first word). ``clause_spans(rules=...)`` picks them; `toolsift bench routing --only parts` measures
# each and chooses the shipped set on one half of the labelled requests (benchmarks/routing/parts.py).
_RULE_CUTS = {
    # "find the painting X and give me ...", "..., and provide a list of ..."
    "verb_and": re.compile(rf",?\s+and\s+(?:please\s+)?(?=(?:{_VERBS})\s+(?:{_OBJECT})\b)", re.IGNORECASE),
    # "..., and can you recommend ...", "... and do you have ...", "..., and how ..." ("... and I need ..."
    # is left whole: it mostly follows a scene ("I'm planning a trip and I need the weather"))
    "question_and": re.compile(r",?\s+and\s+(?=(?:can|could|would|will)\s+you\b|do\s+you\b|is\s+there\b|"
                               r"are\s+there\b|"
                               r"(?:what|how|where|which|who|when|why)\s+(?:is|are|was|were|do|does|did|can|"
                               r"could|should|would|will|much|many|long)\b)", re.IGNORECASE),
    # "First, ... Finally, ..." (numbered steps "1) ... 2) ..." are cut by _numbered)
    "numbered": re.compile(r",?\s*\b(?:first(?:ly)?|second(?:ly)?|third(?:ly)?|finally|lastly|next|afterwards)\b,\s*",
                           re.IGNORECASE),
}
# "1) ... 2) ...", "(1) ...", "1. ... 2. ..." inline: cut only when the steps 1 and 2 are both there
# ("I donated 40. How much ..." is a sentence end, not a step)
_STEP = re.compile(r"(?:^|(?<=\s))(?:\((\d{1,2})\)|(\d{1,2})[.)])\s+(?=[A-Za-z])")
# "the asset profile, recommendation trends, net share purchase activity, and earnings information":
# a list of three or more (two commas and a final "and"/"or") is cut at each item; its items may be
# short ("recommendation trends"), so they are kept from one word on.
_ENUM_ITEM = re.compile(r",\s+(?:and\s+|or\s+)?|\s+(?:and|or)\s+(?=[^,]*$)", re.IGNORECASE)
RULES: tuple[str, ...] = ("verb_and", "question_and", "numbered", "enumeration")
MIN_PART_WORDS = 3
MIN_ITEM_WORDS = 1
MAX_ITEM_WORDS = 4
MAX_PARTS = 6
# Part relevance is raised to this power: min-max relevance over the candidates gives the request's
# top tools ~0.8 for every part, so one pick "served" all parts and the greedy stopped covering.
# Cubed, only a part's own best tools count. Chosen in an exploration on 100 dev-half queries per
# multi-tool file (mean of nDCG@5 and all-gold@10: 0.784 without coverage, 0.789 with coverage 0.3
# cubed; unsharpened, coverage 0.3 left all-gold@10 unchanged on every file); `toolsift bench
# routing` then cross-fits the coverage weight on its halves (docs/routing.md).
SHARPNESS = 3.0


def _cuts(query: str, rules: Collection[str]) -> list[tuple[int, int]]:
    """The (start, end) of every cut, in order, overlapping ones merged."""
    found = cuts(_CUT, query)
    for rule in rules:
        if rule in _RULE_CUTS:
            found += [(m.start(), m.end()) for m in _RULE_CUTS[rule].finditer(query)]
    if "numbered" in rules:
        steps = [(m.start(), m.end(), int(m.group(1) or m.group(2))) for m in _STEP.finditer(query)]
        if {1, 2} <= {n for _, _, n in steps}:
            found += [(s, e) for s, e, _ in steps]
    merged: list[tuple[int, int]] = []
    for s, e in sorted(found):
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(e, merged[-1][1]))
        else:
            merged.append((s, e))
    return merged


def _enumeration(query: str, s: int, e: int) -> list[tuple[int, int]]:
    """The items of a list of three or more inside one part (module comment); [(s, e)] if none."""
    text = query[s:e]
    if text.count(",") < 2 or not re.search(r",\s+(?:and|or)\s+|\s(?:and|or)\s+[^,]*$", text, re.IGNORECASE):
        return [(s, e)]
    out, pos = [], s
    for m in _ENUM_ITEM.finditer(text):
        out.append((pos, s + m.start()))
        pos = s + m.end()
    out.append((pos, e))
    out = [(a, b) for a, b in out if b > a]
    # the items between the first and the last are the list's own: short ("balance sheet data"); a long
    # one means the commas set off a clause ("My son, who is showing ..., is asking ...")
    if len(out) < 3 or any(len(query[a:b].split()) > MAX_ITEM_WORDS for a, b in out[1:-1]):
        return [(s, e)]
    return out


def clause_spans(query: str, max_parts: int = MAX_PARTS, *, rules: Collection[str] = RULES) -> list[tuple[int, int]]:
    """(start, end) character spans of the parts of a request that has several; [] otherwise.

    Parts are cut at sentence ends, new lines and chaining connectives, plus what ``rules`` add
    (``RULES``, the default: "and" before a request verb or a question, numbered steps, lists of
    three or more; ``()`` = the split before issue 38). A fragment of fewer than three words (one,
    for a list item) is glued to the part before it; only the first ``max_parts`` parts are kept
    (the rest join the last one).
    """
    pieces: list[tuple[int, int, bool]] = []   # (start, end, is a list item)
    pos = 0
    for cut in _cuts(query, rules) + [(len(query), len(query))]:
        s, e = pos, cut[0]
        pos = cut[1]
        while s < e and (query[s].isspace() or query[s] in ",:"):
            s += 1
        while e > s and query[e - 1].isspace():
            e -= 1
        lead = _LEAD.match(query, s, e)
        if lead:
            s = lead.end()
        if s >= e:
            continue
        items = _enumeration(query, s, e) if "enumeration" in rules else [(s, e)]
        pieces += [(a, b, len(items) > 1) for a, b in items]
    spans: list[tuple[int, int]] = []
    for s, e, item in pieces:
        if spans and len(query[s:e].split()) < (MIN_ITEM_WORDS if item else MIN_PART_WORDS):
            spans[-1] = (spans[-1][0], e)
        else:
            spans.append((s, e))
    if spans and len(query[spans[0][0]:spans[0][1]].split()) < MIN_PART_WORDS and len(spans) > 1:
        spans[1] = (spans[0][0], spans[1][1])  # a short opening ("Hi!") belongs to the next part
        spans = spans[1:]
    if len(spans) > max_parts:
        spans = spans[:max_parts - 1] + [(spans[max_parts - 1][0], spans[-1][1])]
    return spans if len(spans) >= 2 else []


def _norm_columns(m: np.ndarray) -> np.ndarray:
    """Min-max per column over the candidates; a column without spread becomes 0 (it tells nothing)."""
    lo, hi = m.min(axis=0, keepdims=True), m.max(axis=0, keepdims=True)
    span = hi - lo
    return np.where(span > 0, (m - lo) / np.where(span > 0, span, 1.0), 0.0)


def part_relevance(lexical: np.ndarray | None, dense: np.ndarray | None,
                   weights: tuple[float, float]) -> np.ndarray:
    """(candidates x parts) relevance in [0, 1] from per-part BM25 and cosine scores (either may
    be None: a BM25-only or dense-only ranking), fused like the whole ranking, then sharpened."""
    parts = [(w, _norm_columns(np.asarray(m, dtype=np.float64))) for w, m in zip(weights, (lexical, dense))
             if m is not None]
    total = sum(w for w, _ in parts) or 1.0
    return (sum(w * m for w, m in parts) / total) ** SHARPNESS


def cover(scores: np.ndarray, rel: np.ndarray, part_weights: np.ndarray, lam: float, n: int) -> np.ndarray:
    """The order (indices into ``scores``) of the first ``n`` picks of the xQuAD greedy (module doc).

    ``scores``: the fused scores of the candidates, best first; ``rel``: their per-part relevance.
    """
    m = len(scores)
    n = min(n, m)
    top = float(scores[0]) if m else 0.0
    base = (1 - lam) * (scores / top if top > 0 else np.zeros(m))
    need = np.ones(rel.shape[1])            # prod over chosen of (1 - rel_p(s)), per part
    left = np.ones(m, dtype=bool)
    order = np.empty(n, dtype=np.int64)
    for j in range(n):
        gain = base + lam * (rel * (part_weights * need)).sum(axis=1)
        gain[~left] = -np.inf
        pick = int(np.argmax(gain))         # ties: the better fused rank (argmax takes the first)
        order[j] = pick
        left[pick] = False
        need *= 1 - rel[pick]
    return order
