"""How the servers stop: SIGTERM (a service manager, `docker stop`, `kill`) is a clean stop.

uvicorn handles SIGTERM with a graceful shutdown and then raises the signal again with the handler
that was in place before it started, so with Python's default one a server stopped on request
died of the signal (exit 143, -15 to a parent) although it had shut down cleanly; docs/cli.md
says a server stopped cleanly exits 0. Ctrl-C (SIGINT) is left to the CLI: "interrupted", 130.
"""
from __future__ import annotations

import contextlib
import signal
import threading
from typing import Any, Iterator

__all__ = ["terminate_cleanly"]


@contextlib.contextmanager
def terminate_cleanly(server: Any) -> Iterator[None]:
    """Run a ``uvicorn.Server`` in the block so that SIGTERM stops it and the process goes on to
    exit 0: the handler in place asks the server to exit (``should_exit``) rather than ending the
    process, whether the signal comes before uvicorn installs its own handlers or is raised again
    by uvicorn after its shutdown. Does nothing outside the main thread (signals are its alone)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        server.should_exit = True

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
