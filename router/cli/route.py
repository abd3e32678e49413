"""`toolsift index` and `toolsift route`.

    toolsift index --db PATH [--model ID]
    toolsift route "QUERY" --db PATH [-k 5] [--method bm25|dense|hybrid] [--json]
    toolsift route --queries FILE.jsonl|- --db PATH [-k 5] [--method ...]
    toolsift route --messages FILE.json|- --db PATH        # a conversation: routes its next step

With --queries each input line is {"id", "query"} or {"id", "messages"}; on a pipe (or with
--json) each output line is {"id", "tools": [...]} in rank order, on a terminal one table per
query. Warnings (e.g. BM25-only fallback, tools a token budget dropped) go to stderr so stdout
stays machine-readable.

Nothing heavy is imported before the router opens: a fresh `toolsift route` on a 20k-tool catalog
is mostly start-up (measured by `toolsift bench cold-route`).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Literal, Optional

import typer

from router.errors import RouterError

from .options import Db, IndexDir, Json, Model, catalog_path
from .output import ellipsize, print_json, say, show, table, wants_json, warn
from .route_input import read_messages, read_queries


def index(db: Db = None, model: Model = None, index_dir: IndexDir = None, as_json: Json = False) -> None:
    """Build the BM25 and dense indexes next to the catalog (only new/changed records are embedded)."""
    run_index(db, model, index_dir, wants_json(as_json))


def run_index(db: Optional[Path], model: Optional[str], index_dir: Optional[Path], quiet: bool) -> None:
    """Index with a progress bar on a terminal's stderr (one line per stage on a pipe); a
    sentence, or one JSON object when ``quiet``. Ctrl-C keeps the vectors made so far."""
    import time

    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from router.encoders.dense import EmbeddingInterrupted
    from router.index.build import build_index

    from .output import INTERRUPTED, console

    err = console(stderr=True)
    live = err.is_terminal
    started = [0.0]

    def on_start(n: int) -> None:
        started[0] = time.perf_counter()
        if live:
            progress.update(task, total=n)
        elif n:  # a pipe or a log: one line when the slow stage starts, one when it ends
            say(f"index: embedding {n} new passage(s) ...", err=True)

    try:
        with Progress(TextColumn("embedding"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                      console=err, transient=True, disable=not live) as progress:
            task = progress.add_task("embed", total=0)
            report = build_index(catalog_path(db), index_dir=index_dir, model=model, on_start=on_start,
                                 on_batch=lambda n: progress.advance(task, n))
    except EmbeddingInterrupted as stop:
        say(f"interrupted: {stop.kept} of {stop.wanted} new embeddings kept in {stop.where}; "
            f"`toolsift index` again embeds the other {stop.wanted - stop.kept}", err=True)
        raise SystemExit(INTERRUPTED) from None
    if not live and report.embedded:
        secs = time.perf_counter() - started[0]
        say(f"index: embedded {report.embedded} in {secs:.1f}s ({report.embedded / max(secs, 1e-9):.0f}/s)", err=True)
    if quiet:
        print_json(report.to_dict())
    elif report.up_to_date:
        say(f"index up to date: {report.records} records ({report.path})", wrap=True)
    else:
        say(f"indexed {report.records} records in {report.seconds:.1f}s: {report.embedded} embedded, "
            f"{report.reused} from cache ({report.path})", wrap=True)


def _tools(selections, tokens: bool) -> list[dict[str, Any]]:
    out = []
    for s in selections:
        d = s.to_dict()
        if tokens and "tokens" not in d:
            d["tokens"] = _tokens_of(s)
        out.append(d)
    return out


def _tokens_of(selection) -> int:
    from router.tokens import tool_tokens

    return selection.tokens if selection.tokens is not None else tool_tokens(selection.record.to_openai_tool())


def _budget_warning(label: str, selections, k: int) -> None:
    report = getattr(selections, "budget", None)
    if report is None or not report.dropped:
        return
    misfits = report.dropped
    if misfits:
        warn(f"{label}the token budget ({report.limit}) dropped {len(misfits)} tool(s) that did not fit: "
             + ", ".join(f"{d.record.id} ({d.tokens} tokens)" for d in misfits[:5])
             + (" ..." if len(misfits) > 5 else "") + f"; {len(selections)} of k={k} selected, "
             f"{report.used} tokens used")


def _short_of_k(router, selections, k: Optional[int], adaptive: bool, method: str,
                 min_score: Optional[float], scoped: bool) -> Optional[str]:
    """Why a fixed ``-k N`` gave fewer than N tools, or None when it did not (or the budget or an
    abstention already said why): `-k 5 --method bm25` gave one tool and no word about it."""
    n = len(selections)
    if k is None or adaptive or n >= k:
        return None
    budget = getattr(selections, "budget", None)
    abstention = getattr(selections, "abstention", None)
    if (budget is not None and budget.dropped) or (abstention is not None and abstention.abstained and not n):
        return None
    lexical = method == "bm25" or router.dense_index() is None
    if n >= len(router):
        why = f"the catalog holds {len(router)} tool(s)"
    elif min_score is not None:
        why = f"the others score below --min-score {min_score}"
    elif lexical:
        why = ("BM25 ranks only tools that share a word with the request"
               + ("" if method == "bm25" else "; dense search is off (see the warning above)")
               + (", and --namespace/--exclude-namespace narrowed the catalog" if scoped else "")
               + "; `--method hybrid` on an up-to-date index ranks every tool")
    elif scoped:
        why = "the namespaces asked for hold no more tools"
    else:
        why = "no more tools were ranked"
    return f"{n} of k={k} tool(s) selected: {why}"


def _language_note(q: Any) -> tuple[Optional[dict[str, Any]], Optional[str]]:
    """The request's language when it is not English (router.ranking.language), and the warning."""
    from router.ranking.language import request_language

    lang = request_language(_query_text(q))
    if lang is None:
        return None, None
    return lang.to_dict(), (f"the request reads as {lang.name} (p={lang.probability:.2f}): routing is built and "
                            "measured for English requests, so tools may be misranked (docs/routing.md#language)")


def route(query: Optional[str] = typer.Argument(None, metavar="QUERY", show_default=False,
                                                help="The request to route (or use --queries / --messages)."),
          db: Db = None,
          k: Optional[int] = typer.Option(None, "-k", "--k", show_default=False,
                                          help="How many tools to select (a fixed k). Without it: adaptive k, "
                                               "up to 10 tools chosen from the scores (docs/routing.md)."),
          adaptive: bool = typer.Option(False, "--adaptive", help="Adaptive k with -k N as its ceiling."),
          abstain: Literal["flag", "empty"] = typer.Option("flag", "--abstain", help="When no tool fits: flag (say so, keep the "
                                                                 "ranked tools) or empty (select none)."),
          method: Literal["hybrid", "bm25", "dense"] = typer.Option(
              "hybrid", "--method", help="hybrid (BM25 and dense, fused), bm25 (words only) or dense (meaning only)."),
          as_json: Json = False,
          queries: Optional[str] = typer.Option(None, "--queries", metavar="FILE|-",
                                                help="JSONL: one {id, query|messages} per line; - reads stdin."),
          messages: Optional[str] = typer.Option(None, "--messages", metavar="FILE|-",
                                                 help="A conversation (JSON: a messages list, or {\"messages\": "
                                                      "[...]}); routes its next step. - reads stdin."),
          min_score: Optional[float] = typer.Option(None, "--min-score", help="Drop tools scoring below this."),
          namespace: Optional[list[str]] = typer.Option(None, "--namespace", "-n", help="Only these namespaces (repeatable)."),
          exclude_namespace: Optional[list[str]] = typer.Option(None, "--exclude-namespace", help="Never these namespaces."),
          pin: Optional[list[str]] = typer.Option(None, "--pin", help="Always include this tool id or name (repeatable)."),
          token_budget: Optional[int] = typer.Option(None, "--token-budget",
                                                     help="Max tokens of the selected tool schemas: a top-k tool "
                                                          "that does not fit is dropped (and listed)."),
          relative_cut: Optional[float] = typer.Option(None, "--relative-cut",
                                                       help="With --token-budget: a lower-ranked tool replaces a "
                                                            "dropped one only if it scores at least this times the "
                                                            "top score (default 0.5)."),
          show_tokens: bool = typer.Option(False, "--tokens", help="Show each tool's schema tokens (always shown "
                                                                   "with --token-budget)."),
          model: Model = None, index_dir: IndexDir = None) -> None:
    """Select the top-k tools for a request, with scores and why each was picked."""
    given = [name for name, v in (("QUERY", query), ("--queries", queries), ("--messages", messages)) if v is not None]
    if len(given) != 1:
        raise RouterError("give one of a QUERY argument, --queries FILE.jsonl or --messages FILE.json"
                          + (f" (not {' and '.join(given)})" if given else ""))
    if k is not None and k <= 0:
        raise RouterError(f"-k must be a positive integer, got {k}")
    if abstain not in ("flag", "empty"):
        raise RouterError(f"--abstain must be flag or empty, not {abstain!r}")
    items = read_queries(queries) if queries is not None else \
        [(None, read_messages(messages))] if messages is not None else [(None, query)]
    from router.ranking.engine import Router

    # BM25 only: the dense files are neither read nor checked, faiss is not imported
    router = Router.open(catalog_path(db), model=model, index_dir=index_dir, dense=method != "bm25")
    for w in router.warnings:
        warn(w)
    opts = dict(k=k, adaptive=True if adaptive else None, abstain=abstain, method=method, min_score=min_score, pinned=pin or (), include_namespaces=namespace or None,
                exclude_namespaces=exclude_namespace or None, token_budget=token_budget, relative_cut=relative_cut)
    tokens = show_tokens or token_budget is not None
    scoped = bool(namespace or exclude_namespace)
    as_json = wants_json(as_json)
    if queries is not None:
        for qid, q in items:  # one bad query must not lose the others' answers
            try:
                selections = router.select(q, **opts)
                line = {"id": qid, "tools": _tools(selections, tokens), **_routing_info(selections)}
                if selections.budget is not None:
                    line["budget"] = selections.budget.to_dict()
                _budget_warning(f"query {qid}: ", selections, k or len(selections))
                short = _short_of_k(router, selections, k, adaptive, method, min_score, scoped)
                if short:
                    warn(f"query {qid}: {short}")
                    line["note"] = short
                lang, lang_warning = _language_note(q)
                line["language"] = lang
                if lang_warning:
                    warn(f"query {qid}: {lang_warning}")
            except RouterError as exc:
                say(f"error: query {qid}: {exc}", err=True)
                line = {"id": qid, "tools": [], "error": str(exc)}
                selections = None
            if as_json:
                print_json(line)
                sys.stdout.flush()
            elif selections is not None:
                _print_table(_query_text(q), selections, tokens, label=f"{qid}: ")
        return
    q = items[0][1]
    selections = router.select(q, **opts)
    _budget_warning("", selections, k or len(selections))
    short = _short_of_k(router, selections, k, adaptive, method, min_score, scoped)
    if short:
        warn(short)
    lang, lang_warning = _language_note(q)
    if lang_warning:
        warn(lang_warning)
    if as_json:
        used = method if (method == "bm25" or router.dense_index() is not None) else "bm25"
        out = {"query": _query_text(q), "method": used, "tools": _tools(selections, tokens),
               "warnings": router.warnings + [w for w in (short, lang_warning) if w], "language": lang,
               **_routing_info(selections)}
        if selections.budget is not None:
            out["budget"] = selections.budget.to_dict()
        print_json(out)
        return
    _print_table(_query_text(q), selections, tokens)


def _routing_info(selections) -> dict[str, Any]:
    """What routing decided beside the tools: the abstention (``abstain``: abstained, evidence,
    threshold; null when not measured), adaptive k's cut (null for a fixed k) and the parts read."""
    a = getattr(selections, "abstention", None)
    return {"abstain": None if a is None else a.to_dict(), "adaptive_k": getattr(selections, "adaptive_k", None),
            "parts": getattr(selections, "parts", 1)}


def _query_text(q: Any) -> str:
    """The text routed on: the query itself, or what a conversation becomes (router.ranking.query)."""
    if isinstance(q, str):
        return q
    from router.ranking.query import normalize_query

    return normalize_query(q)


def _terms(s, compact: bool = False) -> str:
    """Matched words with the fields they hit; ``compact`` (table cells): the first field and how
    many more (the whole list is in --json's ``matched_fields``)."""
    fields = getattr(s, "matched_fields", None) or {}
    if not fields:
        return ", ".join(s.matched_terms)
    if compact:
        return ", ".join(f"{t} ({f[0]}{f' +{len(f) - 1}' if len(f) > 1 else ''})" for t, f in fields.items())
    return ", ".join(f"{t} ({'/'.join(f)})" for t, f in fields.items())


def _why(s) -> str:
    """The reason column: a companion says whose (router.ranking.companions)."""
    of = getattr(s, "companion_of", None)
    if of is not None:
        return f"companion of {of.split('/', 1)[-1]}"
    if getattr(s, "relation", None) == "used":
        return "often used with others"
    part = getattr(s, "part", None)
    if part is not None:  # the words of the request it serves, as many as fit a table cell
        return f"best for “{part if len(part) <= 40 else part[:39] + '…'}”"
    return s.reason


def _print_table(query: str, selections, tokens: bool = False, label: str = "") -> None:
    """A table when the terminal is wide enough for every column; below that, one block per tool
    (an 80-column table left the matched terms a column 2 characters wide)."""
    from .output import terminal_width

    cols = ["#", "tool", "score", "bm25", "dense"] + (["tokens"] if tokens else []) + ["why"]
    rows = []
    for s in selections:
        row = [s.rank, s.record.id, f"{s.score:.3f}", "-" if s.bm25_score is None else f"{s.bm25_score:.2f}",
               "-" if s.dense_score is None else f"{s.dense_score:.3f}"]
        rows.append(row + ([_tokens_of(s)] if tokens else []) + [_why(s)])
    title = f"{label}top tools for: {ellipsize(query, 80)}"
    fixed = sum(max([len(c)] + [len(str(r[i])) for r in rows]) + 3 for i, c in enumerate(cols))
    if fixed + 30 <= terminal_width():
        show(table(cols[:-1] + ["matched terms"] + cols[-1:], [r[:-1] + [_terms(s, compact=True), r[-1]]
                                                                for r, s in zip(rows, selections)],
                   title=title, keep_whole=("tool",), right=("#", "score", "bm25", "dense", "tokens", "why")))
    else:
        import textwrap

        say(title)
        for r, s in zip(rows, selections):
            say(f"{r[0]:>2}. {s.record.id}")
            say(textwrap.fill("    " + "  ".join(f"{c} {v}" for c, v in zip(cols[2:], r[2:])),
                              width=max(40, terminal_width()), subsequent_indent="    "))
            terms = _terms(s)
            if terms:
                say(textwrap.fill(f"    matched: {terms}", width=max(40, terminal_width()), subsequent_indent="      "))
    a = getattr(selections, "abstention", None)
    if a is not None and a.abstained:
        say(f"no tool fits this request (abstained: best evidence {a.evidence:.3f} is below {a.threshold:.3f})"
            + ("; the ranked tools above are the least bad ones" if selections else ""), wrap=True)
    elif not selections:
        say("no tool matched")
    report = getattr(selections, "budget", None)
    if report is not None:
        say(f"tokens: {report.used} of the budget of {report.limit}"
            + (f"; a tool below the top k had to score at least {report.cut:.3f} (relevance cut) to replace a "
               "dropped one" if report.cut is not None else ""), wrap=True)
        for d in report.dropped:
            say(f"  dropped {d.record.id} (rank {d.rank}, score {d.score:.3f}, {d.tokens} tokens): {d.reason}",
                wrap=True, indent="    ")
        if report.skipped:
            say(f"  {report.skipped} lower-ranked tool(s) above the cut did not fit either", wrap=True)
        if report.stopped:
            say(f"  stopped: {report.stopped}", wrap=True, indent="    ")
    elif tokens and selections:
        say(f"tokens: {sum(_tokens_of(s) for s in selections)} in {len(selections)} tool schemas", wrap=True)


def register(app: typer.Typer) -> None:
    app.command("index")(index)
    app.command("route")(route)
