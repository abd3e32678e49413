"""A stdio upstream's stderr: each line labelled with the server's name, the last ones kept.

Without this the `mcp` SDK hands a server our own stderr: with several servers nobody can
tell whose message is whose, and a server that exits at start is reported only as
"Connection closed" while its real reason scrolls by unlabelled. So each stdio server
writes to a pipe of its own; a small thread copies every line to our stderr as
``[server] line`` and keeps the last few, which `StderrTap.explain` adds to the failure.

A thread (not a task) reads the pipe: it needs no event-loop support for pipes, and a
server's grandchild that keeps the pipe open can never block the gateway.
"""
from __future__ import annotations

import os
import sys
import threading
from collections import deque
from typing import IO, Any

import anyio


class StderrTap:
    """One pipe for one server's stderr. Give `writer` to the subprocess, call
    `release_writer()` once it has started, and `close()` when the server is gone."""

    def __init__(self, server: str, *, keep: int = 20, sink: IO[str] | None = None) -> None:
        self.server = server
        self.tail: deque[str] = deque(maxlen=keep)
        self._sink = sink
        read_fd, write_fd = os.pipe()
        self.writer: IO[Any] | None = os.fdopen(write_fd, "wb", buffering=0)
        self._reader = os.fdopen(read_fd, "rb")
        self._eof = threading.Event()
        self._thread = threading.Thread(target=self._pump, name=f"toolsift-stderr-{server}", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        try:
            for raw in self._reader:
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                self.tail.append(line)
                sink = self._sink or sys.stderr  # looked up per line: tests and tools swap sys.stderr
                try:
                    sink.write(f"[{self.server}] {line}\n")
                    sink.flush()
                except (OSError, ValueError):
                    pass  # our stderr is gone; keep draining so the server never blocks on a full pipe
        finally:
            self._reader.close()
            self._eof.set()

    def release_writer(self) -> None:
        """Close our copy of the write end (the subprocess has its own): the reader sees the
        end of the stream once the server exits."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def last_line(self) -> str | None:
        for line in reversed(self.tail):
            if line.strip():
                return line.strip()
        return None

    async def explain(self, reason: str, *, wait: float = 2.0) -> str:
        """``reason`` plus the server's own last words, read to the end of the stream (or
        for at most ``wait`` seconds, in case a grandchild keeps the pipe open)."""
        self.release_writer()
        with anyio.move_on_after(wait):
            await anyio.to_thread.run_sync(self._eof.wait, wait, abandon_on_cancel=True)
        last = self.last_line()
        if not last or last in reason:
            return reason
        return f"{reason}; its stderr ended with: {last[:300]}"

    def close(self) -> None:
        self.release_writer()
