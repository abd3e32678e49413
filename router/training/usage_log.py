"""The usage log: which offered tool a model called, with a valid verdict, for which routing query.

Written by the proxy (``toolsift serve openai --usage-log FILE``) and the MCP gateway
(``toolsift serve mcp --usage-log FILE``), both off by default; read by
``toolsift tune --from-log FILE`` to fine-tune the encoder on what was really used.

One JSON object per line (format version 2)::

    {"v": 2, "ts": "2026-12-01T20:15:02Z", "source": "proxy", "route": "routed",
     "query_hmac": "<keyed hash of the scrubbed routing query>", "query": "<the routing query>",
     "offered": ["get_weather", "get_time", ...], "called": "get_weather", "id": "weather/get_weather",
     "verdict": "valid"}

- ``query`` is present only when message contents are allowed (``--usage-log-content``, a second
  opt-in); without it the line has ``query_hmac`` only, which tells repeated requests of one
  process apart but cannot train anything (`toolsift tune --from-log` says how many lines it
  skipped for it).
- ``query_hmac`` is an HMAC-SHA256 under a random key each writer makes at start and never writes
  anywhere (issue 42): a plain SHA-256 of a short or guessable message (version 1's
  ``query_sha256``) gave the message back to anyone who hashed candidates. It is computed after
  scrubbing, so it cannot confirm a guess of a redacted secret either.
- Even with contents allowed, strings that look like credentials (``sk-...``, ``Bearer ...``,
  ``api_key=...``) are replaced by ``[redacted]`` before the line is written; request headers are
  never read here, so an API key sent as a header never reaches the log.
- Lines are bounded: a tool name over ``MAX_NAME_CHARS`` is left out of ``offered`` and a call of
  one is not written, so a hostile tool list cannot make the log (or its rotation) huge.
- ``id`` is the catalog record id when the tool is a catalog tool (the gateway always knows it; the
  proxy when a request's tools are the catalog's), else null; ``called`` is the name the model used.
- ``verdict`` is the checker's verdict of the call; only valid calls are written.
- ``tenant`` names the tenant whose request it was (with ``--tenants``; absent otherwise).

Each line is written with one ``write`` to a file opened for appending, under an exclusive file lock,
so concurrent writers (threads, processes) never interleave lines. When the file would pass
``max_bytes`` it is rotated first: FILE → FILE.1 → ... → FILE.<keep>, the oldest dropped.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from apidb.jsonl import JsonLineError, TextFileError, parse_lines, read_utf8
from apidb.record import ApiRecord

from ..errors import RouterError

VERSION = 2
READABLE = (1, 2)          # version 1 lines (query_sha256) are still read
MAX_NAME_CHARS = 256       # a longer tool name is never written (OpenAI allows 64)
MAX_OFFERED = 128          # the Chat Completions limit: a line never lists more
MAX_QUERY_CHARS = 4_000    # the routing query is capped (router.ranking.query caps each part at 2,000)
DEFAULT_MAX_BYTES = 16 * 2**20
DEFAULT_KEEP = 3
_SECRETS = re.compile(r"\bsk-[A-Za-z0-9_\-]{12,}|\bBearer\s+[A-Za-z0-9._~+/=\-]{8,}|"
                      r"\b(?:api[_-]?key|access[_-]?token|secret|password|passwd|token)\b\s*[:=]\s*\S+", re.IGNORECASE)


def scrub(text: str) -> str:
    """``text`` with credential-looking strings replaced by ``[redacted]``."""
    return _SECRETS.sub("[redacted]", text)


class UsageLog:
    """Appends usage lines to ``path`` (see the module doc); thread- and process-safe."""

    def __init__(self, path: str | os.PathLike[str], *, content: bool = False,
                 max_bytes: int = DEFAULT_MAX_BYTES, keep: int = DEFAULT_KEEP) -> None:
        if max_bytes < 1024:
            raise RouterError(f"usage log: max_bytes must be at least 1024, got {max_bytes}")
        if keep < 1:
            raise RouterError(f"usage log: keep must be at least 1, got {keep}")
        self.path, self.content, self.max_bytes, self.keep = Path(path), content, max_bytes, keep
        self._lock = threading.Lock()
        self._key = secrets.token_bytes(32)  # query_hmac's key: this writer's only, never written
        if self.path.exists() and not self.path.is_file():  # a FIFO would block the start for ever
            raise RouterError(f"{self.path}: cannot write the usage log (not a regular file)")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "ab"):
                pass
        except OSError as exc:
            raise RouterError(f"{self.path}: cannot write the usage log ({exc.strerror or exc})") from None

    def line(self, *, source: str, query: str, offered: Sequence[str], called: str, verdict: str,
             record_id: str | None = None, route: str | None = None, tenant: str | None = None) -> dict[str, Any]:
        query = scrub(query[:MAX_QUERY_CHARS])  # first: nothing below may tell a redacted secret
        digest = hmac.new(self._key, query.encode("utf-8", "replace"), hashlib.sha256).hexdigest()
        out: dict[str, Any] = {"v": VERSION, "ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "source": source, "route": route, "query_hmac": digest}
        if self.content:
            out["query"] = query
        names = [n for n in offered if len(n) <= MAX_NAME_CHARS][:MAX_OFFERED]
        out.update(offered=names, called=called, id=record_id, verdict=verdict)
        if tenant:  # whose request it was (router.tenancy.keys.client_id decides): tune per tenant
            out["tenant"] = tenant
        return out

    def record(self, **event: Any) -> None:
        """Write one line (the keyword arguments of `line`); a call of an over-long name is not written."""
        import fcntl

        if len(str(event.get("called", ""))) > MAX_NAME_CHARS or len(str(event.get("record_id") or "")) > 1024:
            return

        data = (json.dumps(self.line(**event), ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        with self._lock:
            while True:
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                    st = os.fstat(fd)
                    try:
                        current = os.stat(self.path).st_ino == st.st_ino
                    except FileNotFoundError:
                        current = False
                    if not current:  # another writer rotated it while we waited for the lock
                        continue
                    if st.st_size and st.st_size + len(data) > self.max_bytes:
                        self._shift()  # under the old file's lock; the next round opens a new file
                        continue
                    os.write(fd, data)
                    return
                finally:
                    os.close(fd)

    def _shift(self) -> None:
        """FILE.n → FILE.n+1 (the oldest is overwritten), FILE → FILE.1."""
        for n in range(self.keep - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{n}")
            if older.exists():
                os.replace(older, self.path.with_name(f"{self.path.name}.{n + 1}"))
        os.replace(self.path, self.path.with_name(f"{self.path.name}.1"))


# ---------------------------------------------------------------------------- reading

@dataclass
class LogExamples:
    """What a usage log teaches: (query id, query text, record ids) per distinct query, and what
    was skipped and why."""

    queries: list[tuple[str, str, set[str]]] = field(default_factory=list)
    lines: int = 0
    no_text: int = 0
    unknown: int = 0
    ambiguous: int = 0

    def summary(self) -> str:
        return (f"{self.lines} usage lines: {len(self.queries)} distinct queries to train on; skipped "
                f"{self.no_text} without query text (log written without --usage-log-content), "
                f"{self.unknown} naming no catalog tool, {self.ambiguous} naming several")


def read_events(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The lines of one usage log; RouterError (file, line, field) for a malformed one."""
    p = Path(path)
    if not p.exists() and not p.is_symlink():
        raise RouterError(f"{p}: no such usage log")
    try:  # the one input reader (apidb.jsonl): a file, bounded; each line within apidb.safe_io's limits
        rows = list(parse_lines(read_utf8(p, "the usage log", regular_only=True), strict_unicode=True))
    except TextFileError as exc:
        raise RouterError(str(exc)) from None
    except JsonLineError as exc:
        raise RouterError(f"{p}: line {exc.lineno}: not JSON ({exc.msg})") from None
    out = []
    for n, row in rows:
        if not isinstance(row, dict):
            raise RouterError(f"{p}: line {n}: expected an object")
        if row.get("v") not in READABLE:
            raise RouterError(f"{p}: line {n}: field 'v': unknown usage log version {row.get('v')!r}")
        for key in ("called", "query_sha256" if row["v"] == 1 else "query_hmac"):
            if not isinstance(row.get(key), str) or not row[key]:
                raise RouterError(f"{p}: line {n}: field {key!r} must be a non-empty string")
        if "query" in row and not isinstance(row["query"], str):
            raise RouterError(f"{p}: line {n}: field 'query' must be a string")
        if row.get("id") is not None and not isinstance(row["id"], str):
            raise RouterError(f"{p}: line {n}: field 'id' must be a string or null")
        out.append(row)
    return out


class CatalogNames:
    """Which catalog tool a usage-log line means: its ``id`` when the catalog has it, else the one
    catalog tool whose name (or OpenAI-safe name, or ``namespace__name``) is ``called``."""

    def __init__(self, records: Sequence[ApiRecord]) -> None:
        self.ids = {r.id for r in records}
        self.by_name: dict[str, set[str]] = {}
        for r in records:
            for name in {r.name, r.openai_name(), f"{r.namespace}__{r.name}"}:
                self.by_name.setdefault(name, set()).add(r.id)

    def of(self, row: dict[str, Any]) -> set[str]:
        """The record ids a line may mean: one, none (unknown) or several (ambiguous)."""
        rid = row.get("id") if row.get("id") in self.ids else None
        return {rid} if rid else self.by_name.get(row["called"], set())


def examples(paths: Iterable[str | os.PathLike[str]], records: Sequence[ApiRecord]) -> LogExamples:
    """Training examples from usage logs against a catalog's ``records``: a line's tool is its
    ``id`` when the catalog has it, else the catalog tool whose name (or OpenAI-safe name) is
    ``called`` when exactly one has it."""
    names = CatalogNames(records)
    out = LogExamples()
    grouped: dict[str, tuple[str, set[str]]] = {}
    for path in paths:
        for row in read_events(path):
            out.lines += 1
            text = row.get("query")
            if not text or not text.strip():
                out.no_text += 1
                continue
            hits = names.of(row)
            if not hits:
                out.unknown += 1
                continue
            if len(hits) > 1:
                out.ambiguous += 1
                continue
            grouped.setdefault(text, (text, set()))[1].update(hits)  # the same text: one query
    out.queries = [(f"log-{hashlib.sha256(key.encode('utf-8', 'replace')).hexdigest()[:12]}", text, rel)
                   for key, (text, rel) in grouped.items()]
    return out
