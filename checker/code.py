"""Code-style checking (Gorilla / APIBench): strict tree matching against the catalog.

An index over the catalog's code records maps (function path, identifying
argument values) -> records, so checking one answer is a parse plus a few dict
look-ups. Strict verdicts: correct / wrong_api / hallucinated / unparsable (valid
instead of correct / wrong_api without a gold call). ``mode="gorilla"`` applies
the upstream APIBench rules instead (see gorilla_compat).
"""
from __future__ import annotations

import difflib
import re
from dataclasses import replace
from collections.abc import Iterable
from typing import Any

from apidb.record import ApiRecord

from . import extract
from .budget import MAX_OUTPUT_CHARS, OverBudget, deadline
from .gorilla_compat import GorillaDB, cut_api_call, flavor_of
from .identity import Key, describe, key, normalize_path
from .parse import Call, parse_calls
from .suggest import suggest
from .verdict import Defect, Verdict, make

MODES = ("strict", "gorilla")


def record_keys(calls: tuple[Call, ...] | list[Call]) -> list[Key]:
    """The identity keys of a call expression: every call that names a model.

    ``tf.keras.Sequential([hub.KerasLayer(url)])`` is keyed by the KerasLayer call,
    ``joblib.load(hf_hub_download(repo, file))`` by the download call; a call with
    no identifying literal anywhere is keyed by its outermost function alone.
    """
    keys = [k for k in (key(c) for c in calls) if k[1]]
    if not keys and calls:
        keys = [key(calls[0])]
    return list(dict.fromkeys(keys))


class CodeIndex:
    """The code-style records of a catalog (optionally one namespace), indexed by identity."""

    def __init__(self, records: Iterable[ApiRecord], namespace: str | None = None) -> None:
        self.namespace = namespace
        self.records = [r for r in records if namespace is None or r.namespace == namespace]
        self.code_records = [r for r in self.records if r.call]
        self.by_key: dict[Key, list[tuple[ApiRecord, frozenset[str]]]] = {}
        self.keys_of: dict[str, list[Key]] = {}
        self.keys_by_path: dict[str, list[Key]] = {}
        self.paths: set[str] = set()
        for rec in self.code_records:
            calls = parse_calls(rec.call).calls
            paths = frozenset(normalize_path(c.path) for c in calls)
            self.paths |= paths
            keys = record_keys(calls)
            self.keys_of[rec.id] = keys
            for k in keys:
                bucket = self.by_key.setdefault(k, [])
                if not bucket:
                    self.keys_by_path.setdefault(k[0], []).append(k)
                bucket.append((rec, paths))
        self._by_id = {r.id: r for r in self.records}
        self._gorilla: dict[str, GorillaDB] = {}
        self._nearest: dict[Key, tuple[Key | None, str]] = {}
        self._key_grams: dict[Key, frozenset[str]] = {}
        self._paths_near: dict[str, str | None] = {}

    def __len__(self) -> int:
        return len(self.code_records)

    # -- strict ---------------------------------------------------------------------
    def lookup(self, k: Key, context: frozenset[str] = frozenset()) -> ApiRecord | None:
        """The record with this identity; among several, the one whose calls fit ``context``."""
        bucket = self.by_key.get(k)
        if not bucket:
            return None
        for rec, paths in bucket:
            if paths <= context:
                return rec
        return bucket[0][0]

    def nearest(self, k: Key) -> tuple[Key | None, str]:
        """The closest indexed identity to ``k`` and a sentence saying what differs."""
        if k in self._nearest:
            return self._nearest[k]
        path, ident = k
        pool = self.keys_by_path.get(path)
        if not pool:
            near_path = self._near_path(path)
            pool = self.keys_by_path.get(near_path, []) if near_path else []
        best: Key | None = None
        if pool:
            # trigram overlap shortlists, difflib's ratio decides among the few best
            target = " ".join(v for _, v in ident)
            grams = _grams(target)
            shortlist = sorted(pool, key=lambda c: -len(grams & self._grams_of(c)))[:5]
            sm = difflib.SequenceMatcher(autojunk=False)
            sm.set_seq2(target)
            scored = []
            for cand in shortlist:
                sm.set_seq1(" ".join(v for _, v in cand[1]))
                scored.append((sm.ratio(), cand))
            best = max(scored, key=lambda t: t[0])[1]
        out = (best, _differs(k, best))
        if len(self._nearest) < 100_000 and len(path) + sum(len(v) for _, v in ident) <= 512:
            self._nearest[k] = out  # (model-made keys can be long: only short ones are kept)
        return out

    def _grams_of(self, k: Key) -> frozenset[str]:
        grams = self._key_grams.get(k)
        if grams is None:
            grams = self._key_grams[k] = _grams(" ".join(v for _, v in k[1]))
        return grams

    def _near_path(self, path: str) -> str | None:
        if path in self._paths_near:
            return self._paths_near[path]
        guess = suggest(path, self.keys_by_path, 1)
        if len(self._paths_near) < 100_000 and len(path) <= 512:  # bounded like _nearest
            self._paths_near[path] = guess[0] if guess else None
        return guess[0] if guess else None

    def check(self, output: str, gold: Any = None) -> Verdict:
        chosen, first_calls, note = _choose_calls(output, self.paths)
        # variables as identifying arguments are rare: only then scan for assignments
        env = _assignments(output) if chosen and any(v[0] == "name" for c in chosen for _, v in c.args) else {}
        gold_keys = self.gold_keys(gold) if gold is not None else None
        if chosen is None and first_calls is None:
            return make("unparsable", defects=[Defect("unparsable", note or "no call found in the output")])
        if chosen is None:
            return self._hallucinated(list(first_calls), gold)
        context = frozenset(normalize_path(c.path) for c in chosen)
        matched: list[tuple[Call, Key, ApiRecord]] = []
        keys = {id(c): key(c, env) for c in chosen}
        for c in chosen:
            k = keys[id(c)]
            rec = self.lookup(k, context)
            if rec is not None:
                matched.append((c, k, rec))
        if not matched:
            if gold_keys and any(keys[id(c)] in gold_keys for c in chosen):
                c = next(c for c in chosen if keys[id(c)] in gold_keys)
                return make("correct", call=c.code, details=self._gold_details(gold_keys))
            # report the calls that name something (a model id) before bare ones
            ranked = sorted(chosen, key=lambda c: not keys[id(c)][1])
            return self._hallucinated(ranked, gold, env)
        if gold_keys is None:
            c, k, rec = matched[0]
            return make("valid", api=rec.id, call=c.code)
        for c, k, rec in matched:
            if k in gold_keys:
                return make("correct", api=rec.id, call=c.code, details=self._gold_details(gold_keys))
        c, k, rec = matched[0]
        gold_desc = ", ".join(describe(g) for g in gold_keys) or "unparsable"
        details = self._gold_details(gold_keys)
        return make("wrong_api", api=rec.id, call=c.code, details=details, defects=[Defect(
            "wrong_api", f"calls {rec.id} ({describe(k)}), not the gold API {gold_desc}",
            name=k[0])])

    def gold_keys(self, gold: Any) -> set[Key]:
        """Identity keys of a gold answer: a call string, a record id, an ApiRecord or an api_data dict."""
        if isinstance(gold, ApiRecord):
            text = gold.call or ""
        elif isinstance(gold, dict):
            text = gold.get("api_call") or gold.get("call") or ""
        elif isinstance(gold, str):
            if gold in self._by_id:
                return set(self.keys_of.get(gold, []))
            text = gold
        else:
            return set()
        calls = parse_calls(text).calls if isinstance(text, str) else ()
        return set(record_keys(calls))

    def _gold_details(self, gold_keys: set[Key]) -> dict[str, Any]:
        ids = sorted({rec.id for k in gold_keys for rec, _ in self.by_key.get(k, [])})
        return {"gold_api": ids[0]} if ids else {}

    def _hallucinated(self, calls: list[Call], gold: Any, env: dict[str, str] | None = None) -> Verdict:
        if not self.code_records:
            ns = f" (namespace {self.namespace})" if self.namespace else ""
            return make("hallucinated", call=calls[0].code, defects=[Defect(
                "hallucinated", f"the catalog{ns} holds no code-style APIs (records with a call); "
                "JSON tool calls are checked with check_calls / a 'calls' input line")])
        defects = []
        best: tuple[Key | None, str] | None = None
        for c in calls[:3]:
            k = key(c, env)
            near, differs = self.nearest(k)
            near_rec = self.lookup(near) if near else None
            defects.append(Defect("hallucinated", f"{describe(k)} matches no API in the catalog; {differs}",
                                  name=k[0], suggestions=(near_rec.call,) if near_rec and near_rec.call else ()))
            if best is None:
                best = (near, differs)
        near_rec = self.lookup(best[0]) if best and best[0] else None
        return make("hallucinated", call=calls[0].code, defects=defects,
                    nearest=near_rec.id if near_rec else None,
                    suggestions=[near_rec.call] if near_rec and near_rec.call else [],
                    details={"differs": best[1]} if best else {})

    # -- gorilla-compatible ---------------------------------------------------------
    def gorilla_db(self, flavor: str | None = None) -> GorillaDB:
        flavor = flavor or flavor_of(self.namespace or _main_namespace(self.code_records))
        if flavor not in self._gorilla:
            self._gorilla[flavor] = GorillaDB(self.code_records, flavor)
        return self._gorilla[flavor]

    def check_gorilla(self, output: str, gold: Any = None, flavor: str | None = None) -> Verdict:
        db = self.gorilla_db(flavor)
        cand = cut_api_call(output, db.flavor)
        if cand is None:
            return make("unparsable", defects=[Defect("unparsable", "no 'api_call' in the output "
                                                      "(upstream TorchHub scoring skips it)")],
                        details={"mode": "gorilla"})
        entry = db.match(cand)
        if entry is None:
            return make("hallucinated", call=cand, details={"mode": "gorilla"}, defects=[Defect(
                "hallucinated", "no database entry's function and key argument values occur in the call")])
        gold_domain = self.gold_domain(gold)
        details = {"mode": "gorilla", "domain": entry.domain}
        if gold is None:
            return make("valid", api=entry.record.id, call=cand, details=details)
        details["gold_domain"] = gold_domain
        if entry.domain == gold_domain:
            return make("correct", api=entry.record.id, call=cand, details=details)
        return make("wrong_api", api=entry.record.id, call=cand, details=details, defects=[Defect(
            "wrong_api", f"first matching entry {entry.record.id} has domain {entry.domain!r}, "
            f"gold domain is {gold_domain!r}")])

    def gold_domain(self, gold: Any) -> str | None:
        if isinstance(gold, dict):
            api_data = gold.get("api_data")  # an APIBench row; anything else has no domain
            return gold.get("domain") or (api_data.get("domain") if isinstance(api_data, dict) else None)
        if isinstance(gold, ApiRecord):
            return gold.metadata.get("domain")
        if isinstance(gold, str):
            rec = self._by_id.get(gold)
            if rec is None:
                keys = self.gold_keys(gold)
                rec = next((self.lookup(k) for k in keys if self.lookup(k)), None)
            return rec.metadata.get("domain") if rec else None
        return None


def _main_namespace(records: list[ApiRecord]) -> str:
    from collections import Counter

    counts = Counter(r.namespace for r in records)
    return counts.most_common(1)[0][0] if counts else ""


def _choose_calls(output: str, paths: set[str]) -> tuple[list[Call] | None, tuple[Call, ...] | None, str | None]:
    """The API-like calls of the first snippet that has any, else the first calls seen;
    and why a snippet was left unparsed, if a budget stopped one."""
    first: tuple[Call, ...] | None = None
    note = None
    for snippet in extract.snippets(output):
        parsed = parse_calls(snippet)
        note = note or parsed.note
        calls = parsed.calls
        if not calls:
            continue
        api_like = [c for c in calls if normalize_path(c.path) in paths]
        if api_like:
            return api_like, first, note
        if first is None:
            first = calls
    return None, first, note


def _grams(text: str) -> frozenset[str]:
    text = f"  {text.lower()} "
    return frozenset(text[i:i + 3] for i in range(len(text) - 2))


_ASSIGN = re.compile(r"""(?<![\w.])([A-Za-z_]\w*)\s*=\s*(['"])([^'"\n\\]{1,200})\2""")


def _assignments(output: str) -> dict[str, str]:
    """``name = 'literal'`` assignments anywhere in the answer (first one wins)."""
    env: dict[str, str] = {}
    for m in _ASSIGN.finditer(extract.unescape(output)):
        env.setdefault(m.group(1), m.group(3))
    return env


def _differs(k: Key, near: Key | None) -> str:
    if near is None:
        return "no API with a similar function in the catalog"
    parts = []
    if near[0] != k[0]:
        parts.append(f"function {k[0]} (catalog has {near[0]})")
    mine, theirs = dict(k[1]), dict(near[1])
    for name in sorted(set(mine) | set(theirs)):
        a, b = mine.get(name), theirs.get(name)
        if a != b:
            label = "argument " + name.lstrip("#") if name.startswith("#") else name
            parts.append(f"{label}: {a!r} (catalog has {b!r})" if a is not None and b is not None
                         else f"{label}: {'missing' if a is None else repr(a)} (catalog has "
                              f"{'none' if b is None else repr(b)})")
    return f"nearest is {describe(near)}" + (": " + "; ".join(parts) if parts else "")


_CACHE: list[tuple[Any, Any, CodeIndex]] = []


def index_for(catalog: Any, namespace: str | None = None) -> CodeIndex:
    """A (cached) CodeIndex for a Catalog, a list of ApiRecords or a CodeIndex."""
    if isinstance(catalog, CodeIndex):
        if namespace is None or namespace == catalog.namespace:
            return catalog
        catalog = catalog.records
    from apidb.catalog import Catalog

    if isinstance(catalog, Catalog):
        ident: Any = ("db", str(catalog.path), catalog.generation, namespace)
        owner: Any = None
    else:
        catalog = catalog if isinstance(catalog, (list, tuple)) else list(catalog)
        ident, owner = ("list", id(catalog), len(catalog), namespace), catalog
    for i, (cid, cown, idx) in enumerate(_CACHE):
        if cid == ident and (owner is None or cown is owner):
            return idx
    records = catalog.records(namespace) if isinstance(catalog, Catalog) else catalog
    idx = CodeIndex(records, namespace)
    _CACHE.append((ident, owner, idx))
    del _CACHE[:-8]
    return idx


def check_code(output: Any, catalog: Any, gold: Any = None, mode: str = "strict",
               namespace: str | None = None) -> Verdict:
    """Check a model's code-style answer against a catalog. Never raises on bad output:
    whatever the answer, the result is a verdict, within the budget of `checker.budget`
    (the first MAX_OUTPUT_CHARS characters are checked; a check out of time is
    ``unparsable`` with that reason).

    ``catalog``: a Catalog, a list of ApiRecords or a CodeIndex. ``gold``: the gold
    call (string), a record id, an ApiRecord, or an APIBench ``api_data`` dict.
    """
    if mode not in MODES:
        from .errors import CheckerError

        raise CheckerError(f"unknown mode {mode!r} (choose from: {', '.join(MODES)})")
    index = index_for(catalog, namespace)
    try:
        with deadline():
            text = _as_text(output)
            verdict = index.check_gorilla(text[:MAX_OUTPUT_CHARS], gold) if mode == "gorilla" \
                else index.check(text[:MAX_OUTPUT_CHARS], gold)
    except RecursionError:
        return make("unparsable", defects=[Defect("unparsable", "output nests too deeply to parse")])
    except OverBudget as exc:
        return make("unparsable", defects=[Defect("unparsable", str(exc))])
    if len(text) > MAX_OUTPUT_CHARS:  # say so: the verdict is about the first part only
        verdict = replace(verdict, details={**verdict.details, "checked_chars": MAX_OUTPUT_CHARS})
    return verdict


def _as_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, (bytes, bytearray)):
        return bytes(output).decode("utf-8", errors="replace")
    if output is None:
        return ""
    try:
        return str(output)
    except ValueError:  # an int too long to print: no code in it either
        return ""
