"""Tool names: how a client names one tool of one upstream server, with no ambiguity.

The scheme (docs/gateway.md, "Tool names"; docs/security.md, "MCP gateway"):

* A tool's qualified name is ``server__tool``: the server's name from the config, two
  underscores, then the tool's name exactly as the server lists it (which may itself
  contain ``__`` or start with ``_``).
* A server name starts with a letter or digit, uses letters, digits, ``.``, ``-``, ``_``,
  contains no ``__`` and does not end with ``_``. So the first ``__`` of a qualified name is
  always the separator: `split` reads any qualified name back to exactly one (server, tool),
  and no two tools of any servers share a qualified name.
* A name whose part before the first ``__`` is a server's name means that server's tool or
  nothing: it never falls through to another server's tool that happens to be called so.
  Any other name is a bare tool name: the one tool of that name on any server, or ambiguous.

A server whose ``tools/list`` names one tool more than once is handled by `unique_listing`.
"""
from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from apidb.record import ApiRecord

SEP = "__"
# First character alphanumeric, last not '_', no '__' anywhere (checked apart, for the message).
_SERVER_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9.-])?$")
SERVER_NAME_RULE = ("names start with a letter or digit, use letters, digits, '.', '-', '_', and neither "
                    "contain '__' nor end with '_' (so the first '__' of 'server__tool' always ends the "
                    "server name)")


def server_name_problem(name: Any) -> str | None:
    """Why ``name`` cannot be a server name, or None when it can."""
    if not isinstance(name, str) or not _SERVER_NAME.match(name) or SEP in name:
        return SERVER_NAME_RULE
    return None


def qualify(server: str, tool: str) -> str:
    return f"{server}{SEP}{tool}"


def qualified(record: ApiRecord) -> str:
    """The qualified name of an upstream tool's record (its namespace is the server)."""
    return qualify(record.namespace, record.name)


def split(name: str) -> tuple[str, str] | None:
    """(server, tool) read from a qualified name: cut at the first ``__``; None without one."""
    server, sep, tool = name.partition(SEP)
    return (server, tool) if sep and server else None


class Directory:
    """Which tool each name a client may use refers to, over the tools of ``servers``.

    ``servers`` are all the server names the gateway knows (up or not): a name that starts
    with one of them is scoped to that server even while it is down.
    """

    def __init__(self, records: Iterable[ApiRecord], servers: Collection[str],
                 withheld: dict[str, dict[str, str]] | None = None) -> None:
        self.servers = frozenset(servers)
        self.records = list(records)
        self._by_server = {(r.namespace, r.name): r for r in self.records}
        self._by_name: dict[str, list[ApiRecord]] = {}
        for rec in self.records:
            self._by_name.setdefault(rec.name, []).append(rec)
        self._withheld = withheld or {}

    def restricted(self, servers: Collection[str]) -> "Directory":
        """The same names over some servers only (a tenant's): the other servers' tools, names and
        problems are not there at all, so a name scoped to one of them is just an unknown name."""
        keep = frozenset(servers)
        return Directory([r for r in self.records if r.namespace in keep], self.servers & keep,
                         {s: w for s, w in self._withheld.items() if s in keep})

    def scope(self, name: str) -> tuple[str, str] | None:
        """(server, tool) when ``name`` starts with a known server's name and ``__``."""
        parts = split(name)
        return parts if parts and parts[0] in self.servers else None

    def get(self, server: str, tool: str) -> ApiRecord | None:
        return self._by_server.get((server, tool))

    def named(self, tool: str) -> list[ApiRecord]:
        """Every server's tool of that bare name."""
        return list(self._by_name.get(tool, ()))

    def withheld(self, server: str, tool: str) -> str | None:
        """Why ``server``'s tool ``tool`` is listed but not served (see `unique_listing`)."""
        why = self._withheld.get(server, {}).get(tool)
        return f"server {server!r} {why}" if why else None

    def withheld_anywhere(self, tool: str) -> list[str]:
        return [f"server {s!r} {why}" for s, per_server in sorted(self._withheld.items())
                for t, why in per_server.items() if t == tool]

    def find(self, name: str) -> ApiRecord | None:
        """The one tool ``name`` refers to under the scheme, or None (unknown or ambiguous)."""
        scoped = self.scope(name)
        if scoped is not None:
            return self.get(*scoped)
        matches = self._by_name.get(name, ())
        return matches[0] if len(matches) == 1 else None

    def callable_name(self, record: ApiRecord) -> str:
        """The shortest name that reaches ``record``: the bare name when it does, else qualified."""
        return record.name if self.find(record.name) is record else qualified(record)


def unique_listing(tools: Sequence[Any]) -> tuple[list[Any], list[str], dict[str, str]]:
    """A server's ``tools/list`` items with each tool name once.

    Returns (items, problems, withheld). Copies that are identical count once (a
    paginator that repeats an item does no harm); copies that differ are all dropped,
    because which definition the server would run is unknowable: ``withheld`` maps such a
    name to the reason a call to it is refused. Items without a usable name pass through
    (the loader reports them).
    """
    groups: dict[str, list[Any]] = {}
    for item in tools:
        name = item.get("name") if isinstance(item, dict) else None
        if isinstance(name, str) and name.strip():
            groups.setdefault(name.strip(), []).append(item)
    problems: list[str] = []
    withheld: dict[str, str] = {}
    for name, copies in groups.items():
        if len(copies) < 2:
            continue
        times = "twice" if len(copies) == 2 else f"{len(copies)} times"
        if len({json.dumps(c, sort_keys=True, default=str) for c in copies}) == 1:
            problems.append(f"tools/list names {name!r} {times} (identical copies, served once)")
        else:
            problems.append(f"tools/list names {name!r} {times} with different definitions; it is not served")
            withheld[name] = (f"lists tool {name!r} more than once with different definitions; the gateway "
                              "does not call it, since which one would run is unknown")
    seen: set[str] = set()
    items = []
    for item in tools:
        name = item.get("name") if isinstance(item, dict) else None
        key = name.strip() if isinstance(name, str) else None
        if key and (key in withheld or key in seen):
            continue
        if key:
            seen.add(key)
        items.append(item)
    return items, problems, withheld
