"""The upstream tools a gateway serves, kept in step with each server's ``tools/list``.

Three views of the same tools: the catalog (one namespace per server, synced by content
hash), the `Directory` of names a client may call, and the router that ranks them for
``search_tools``. A server's listing is synced on its own: a malformed list (a tool named
twice, an invalid schema) costs that server the bad entries, reported as its problems, and
never the other servers their tools. The router is rebuilt after a change with the same
model and embedding cache, so only new or edited tools are encoded again.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import anyio

from apidb.catalog import Catalog, SyncReport
from apidb.loaders.mcp import records_from_mcp_tools
from apidb.record import ApiRecord

from .names import Directory, unique_listing

log = logging.getLogger("toolsift.mcp")


class ToolIndex:
    """Catalog + directory + router over the tools of ``namespaces`` (one per server)."""

    def __init__(self, namespaces: Iterable[str], *, db_path: str | Path | None = None, method: str | None = None,
                 model: str | None = None, cache_dir: str | Path | None = None) -> None:
        # Without a db_path the catalog lives in memory: a gateway must never rewrite the
        # namespaces of a user's main catalog by accident.
        self.catalog = Catalog(str(db_path) if db_path else ":memory:")
        self.namespaces: set[str] = set(namespaces)
        self.method, self.model, self.cache_dir = method, model, cache_dir
        self.router: Any = None
        self.directory = Directory([], self.namespaces)
        self.problems: dict[str, list[str]] = {}           # per server: what was wrong with its last list
        self.last_sync: dict[str, dict[str, int]] = {}     # per server: the last sync's counts
        self.encoded: int | None = None                    # tools the last rebuild had to encode
        self.warnings: list[str] = []
        self._withheld: dict[str, dict[str, str]] = {}
        self._lock = anyio.Lock()  # one rebuild at a time; each reads the catalog when it starts
        self._generation = 0       # bumped by every sync that changed something
        self._built = -1           # the generation the last rebuild (even a failed one) was for
        self._rebuilt = anyio.Event()  # set, and replaced, after every rebuild
        self._queued = 0               # rebuilds running or waiting for the lock

    # -- syncing ---------------------------------------------------------------------
    def sync(self, server: str, tools: Sequence[Any]) -> SyncReport | None:
        """Make namespace ``server`` hold exactly these ``tools/list`` items (incrementally).

        Returns the sync report, or None when the tools could not be stored (the server
        keeps its previous tools, and the problem is reported for it).
        """
        self.namespaces.add(server)
        items, problems, withheld = unique_listing(tools)
        records, skipped = records_from_mcp_tools(server, items)
        problems += [f"skipped invalid tool: {line}" for line in skipped]
        report: SyncReport | None
        try:
            report = self.catalog.sync(records, namespaces=[server])
        except Exception as exc:  # noqa: BLE001 - one server's bad list must not cost the others
            problems.append(f"its tools could not be stored ({type(exc).__name__}: {exc}); "
                            "its previous tools are served")
            report = None
        for problem in problems:
            if problem not in self.problems.get(server, ()):
                log.warning("upstream %s: %s", server, problem)
        self.problems[server], self._withheld[server] = problems, withheld
        if report is not None:
            self.last_sync[server] = report.to_dict()
            if report.changed:
                self._generation += 1
        self.refresh_directory()
        return report

    def refresh_directory(self) -> None:
        self.directory = Directory(self.records(), self.namespaces, self._withheld)

    def records(self) -> list[ApiRecord]:
        return self.catalog.records(sorted(self.namespaces)) if self.namespaces else []

    def server_problems(self) -> dict[str, list[str]]:
        return {server: list(p) for server, p in sorted(self.problems.items()) if p}

    # -- the router ------------------------------------------------------------------
    async def rebuild(self) -> None:
        """Rebuild the router if the catalog changed since the last build (in a thread).
        If the build fails, the previous router stays and the error propagates."""
        self._queued += 1
        try:
            async with self._lock:
                if self._generation == self._built:
                    return  # a rebuild queued behind this one already covered its change
                generation, records = self._generation, self.records()
                try:
                    router = await anyio.to_thread.run_sync(self._build_router, records, abandon_on_cancel=True)
                    self._install(router)
                finally:
                    self._built = generation  # tried: searches waiting for it go on with what there is
        finally:
            self._queued -= 1
            self._rebuilt.set()
            self._rebuilt = anyio.Event()

    async def wait_current(self) -> None:
        """Wait until the router covers every sync made so far (a server that just joined or
        changed is searchable once its rebuild ends; only its new tools are encoded)."""
        target = self._generation
        while self._built < target and self._queued:  # none queued: nothing to wait for (ingest)
            await self._rebuilt.wait()

    def rebuild_now(self) -> None:
        """Synchronous rebuild (for callers outside an event loop)."""
        generation = self._generation
        self._install(self._build_router(self.records()))
        self._built = generation

    def _build_router(self, records: list[ApiRecord]) -> Any:
        if not records:
            return None
        from router.ranking.engine import Router

        if self.router is not None:  # same model and embedding cache: only new tools get encoded
            router = self.router.with_records(records)
        else:
            kwargs: dict[str, Any] = {"model": self.model}
            if self.cache_dir is not None:
                kwargs["cache_dir"] = self.cache_dir
            router = Router.from_records(records, **kwargs)
        if self.method != "bm25":
            router.dense_index()  # embed now, in the background, not on the client's first search
        return router

    def _install(self, router: Any) -> None:
        self.router = router
        dense = router is not None and self.method != "bm25"
        self.encoded = router.embedder.docs_encoded if dense else None
        for warning in getattr(router, "warnings", None) or ():
            if str(warning) not in self.warnings:
                self.warnings.append(str(warning))

    # -- the encoder -----------------------------------------------------------------
    async def load_encoder(self) -> str | None:
        """Load (and warm up) the embedding model now, in a thread, so that neither the first
        index nor the first search waits for it. Returns why it failed, or None."""
        if self.method == "bm25":
            return None
        try:
            await anyio.to_thread.run_sync(_warm_encoder, self.model, abandon_on_cancel=True)
        except Exception as exc:  # noqa: BLE001 - the first index build reports it again
            return f"{type(exc).__name__}: {exc}"
        return None

    def close(self) -> None:
        self.catalog.close()


def _warm_encoder(model: str | None) -> None:
    from router.encoders.dense import DEFAULT_MODEL, Embedder

    # the encoder `route` uses (ONNX Runtime; the default model ships ready), loaded once per
    # process: the routers built later share its session
    Embedder(model or DEFAULT_MODEL).encode_query("warm up")
