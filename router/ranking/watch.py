"""A router that follows its catalog: live updates for replicas (``Router.open(db, watch=True)``).

`LiveRouter` answers like a `router.Router` (it hands every call to the router of the current
`CatalogView`) while a watcher thread follows the catalog:

- PostgreSQL: ``LISTEN toolsift_catalog``; every committed change (apidb.catalog) wakes it at once.
  The counters are also compared every ``poll`` seconds, so a notice missed during a reconnect
  is caught up anyway.
- SQLite: the file's generation counters are read every ``poll`` seconds.

A change is applied as a delta (router.index.stored: new, changed and removed records, vectors
that arrived) into a new view and a new router, then swapped in with one assignment: requests
in flight finish on the router they started with, and routing never pauses. If the catalog
cannot be reached (the server stopped, the network went), routing goes on over the last loaded
view, `health()` says ``degraded`` (the proxy's /healthz shows it), and the watcher reconnects
with backoff and catches up.

A record changed but not yet embedded is in BM25 only; its selections carry a ``note`` saying so.
"""
from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator

from apidb.catalog import Catalog, is_server_url
from apidb.errors import ToolsiftError

from .config import RouterConfig, config_for_model
from ..errors import RouterError
from ..index.build import index_dir_for
from .selection import SelectionList
from ..index.stored import CatalogView, StoredIndex
from .companions import stored_co_use

log = logging.getLogger("toolsift.watch")
PENDING_NOTE = "no stored vector yet (changed since `toolsift index`): ranked by BM25 only"
SQLITE_POLL, SERVER_POLL = 0.25, 1.0


class LiveRouter:
    """A `Router` look-alike over a catalog's current view (see the module doc)."""

    def __init__(self, location: str | os.PathLike[str], build: Callable[[CatalogView, Any], Any],
                 state: StoredIndex, view: CatalogView, *, watch: bool, poll: float | None = None) -> None:
        self.location = location
        self._build, self._state = build, state
        self._live = (build(view, None), view)  # (router, view): read together, replaced together
        self.status, self.error = "ok", None
        self.changes, self.last_change = 0, None
        self.poll = poll or (SERVER_POLL if is_server_url(location) else SQLITE_POLL)
        self._stop = threading.Event()
        self._thread = None
        if watch:
            self._thread = threading.Thread(target=self._watch, name="toolsift-watch", daemon=True)
            self._thread.start()

    # -- routing: everything goes to the current router -----------------------------------
    def select(self, *args: Any, **kwargs: Any) -> SelectionList:
        router, view = self._live
        selections = router.select(*args, **kwargs)
        if not view.pending:
            return selections
        notes = [replace(s, dense_score=None, note=PENDING_NOTE) if s.record.id in view.pending else s
                 for s in selections]
        return SelectionList(notes, selections.budget)

    @property
    def router(self):
        """The router of the current view (a plain `Router`; it does not change by itself)."""
        return self._live[0]

    @property
    def view(self) -> CatalogView:
        return self._live[1]

    @property
    def records(self):
        return self._live[0].records

    def get(self, record_id: str):
        return self._live[0].get(record_id)

    def namespaces(self) -> list[str]:
        return self._live[0].namespaces()

    def __len__(self) -> int:
        return len(self._live[0])

    def __getattr__(self, name: str) -> Any:  # model_id, config, warnings, encoder, lexical ...
        if name.startswith("__") or name == "_live":
            raise AttributeError(name)
        return getattr(self._live[0], name)

    # -- the watcher -------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        router, view = self._live
        embedder = router.__dict__.get("_embedder")
        out = {"status": self.status, "watching": self._thread is not None, "records": len(view.records),
               "generation": view.generation, "vector_generation": view.vector_generation,
               "pending_vectors": len(view.pending), "changes_applied": self.changes,
               "passages_embedded": getattr(embedder, "docs_encoded", 0)}
        if self.error:
            out["error"] = self.error
        return out

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _watch(self) -> None:
        backoff = 0.5
        while not self._stop.is_set():
            try:
                with _Source(self.location) as source:
                    self._catch_up(source.catalog)
                    if self.status != "ok":
                        log.warning("catalog %s reachable again; caught up", source.catalog.path)
                    self.status, self.error, backoff = "ok", None, 0.5
                    while not self._stop.is_set():
                        source.wait(self.poll, self._stop)
                        self._catch_up(source.catalog)
            except Exception as exc:  # noqa: BLE001 - any failure: keep routing, say so, retry
                message = " ".join(str(exc).split())[:300] or type(exc).__name__
                if self.status != "degraded":
                    log.warning("catalog unreachable, routing on the last loaded catalog: %s", message)
                self.status, self.error = "degraded", message
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 5.0)

    def _catch_up(self, cat: Catalog) -> None:
        view = self._state.refresh(cat)
        if view is None:
            return
        previous = self._live[0]
        self._live = (self._build(view, previous), view)
        self.changes += 1
        self.last_change = time.time()


class _Source:
    """The watcher's connections: a read-only catalog, and on PostgreSQL a LISTEN connection."""

    def __init__(self, location: str | os.PathLike[str]) -> None:
        self.location = location
        self._listen = None

    def __enter__(self) -> "_Source":
        self.catalog = Catalog.open(self.location, readonly=True)
        if self.catalog.url is not None:
            from apidb._postgres import CHANNEL, connect

            try:
                self._listen = connect(self.catalog.url)
                self._listen.execute(f"LISTEN {CHANNEL}")
            except BaseException:
                self.catalog.close()
                raise
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.catalog.close()
        if self._listen is not None:
            with contextlib.suppress(Exception):
                self._listen.close()

    def wait(self, seconds: float, stop: threading.Event) -> None:
        """Until a change notice arrives (PostgreSQL) or ``seconds`` pass."""
        if self._listen is None:
            stop.wait(seconds)
            return
        for _ in self._listen.notifies(timeout=seconds, stop_after=1):
            pass


def open_live(router_class: type, location: str | os.PathLike[str], *, model: str | None = None,
              config: RouterConfig | None = None, encoder: str | None = None, dense: bool = True,
              watch: bool = False, index_dir: str | os.PathLike[str] | None = None) -> LiveRouter:
    """A `LiveRouter` over the catalog at ``location`` (see `router.Router.open`)."""
    config = config or config_for_model(model)
    state = StoredIndex(model, encoder, config.field_weights, with_dense=dense)
    if not is_server_url(location):
        state.index_cache = Path(index_dir or index_dir_for(location)) / "cache"
    try:
        with Catalog.open(location, readonly=True) as cat:
            view = state.open(cat)
    except ToolsiftError as exc:
        raise RouterError(str(exc)) from None
    if not view.records:
        raise RouterError(f"{location if not is_server_url(location) else cat.path}: the catalog is empty; "
                          "nothing to route over")

    def build(v: CatalogView, previous: Any) -> Any:
        router = router_class(v.records, model=state.model_id, lexical=v.lexical, dense=v.dense,
                              dense_enabled=v.dense is not None, config=config, warnings=v.warnings,
                              encoder=state.encoder)
        router.co_use = stored_co_use(location, router.warnings)  # learned with the catalog (companions)
        if previous is not None and previous.__dict__.get("_embedder") is not None:
            router._embedder = previous._embedder  # the query encoder stays loaded (and counted) across swaps
        if config.exact_names:
            # built here, in the watcher thread (or at start), not by the first request after a swap;
            # from the previous table's memo only changed records are normalized again
            router._name_memo = previous.name_table().memo if previous is not None else None
            router.name_table()
        return router

    return LiveRouter(location, build, state, view, watch=watch)


@contextlib.contextmanager
def watching(router: Any) -> Iterator[Any]:
    """Close a LiveRouter's watcher at the end of a block (a plain Router passes through)."""
    try:
        yield router
    finally:
        if isinstance(router, LiveRouter):
            router.close()
