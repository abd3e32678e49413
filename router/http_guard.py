"""A header read timeout for the HTTP servers the ways in run (the proxy, the MCP gateway).

uvicorn bounds an idle keep-alive connection but not the time a client takes to send a request's
line and headers, so a client trickling a header, or sending half of one, held its socket and
memory as long as it liked (90-120 s in the issue 42 probe). Both ways in serve through uvicorn,
and neither may import the other (pyproject.toml's import-linter contracts), so the guard lives
here, below both.
"""
from __future__ import annotations

from typing import Any

__all__ = ["HEADER_TIMEOUT", "header_guarded_protocol"]

HEADER_TIMEOUT = 10.0  # seconds a connection may take to send a request line and its headers


def header_guarded_protocol(seconds: float) -> type:
    """uvicorn's h11 protocol with a header read timeout, which uvicorn does not have: a connection
    that has not sent a complete request line and headers within ``seconds`` of opening (or of its
    previous response) is closed. A request in progress (its body, a long answer, an open event
    stream) is the app's business; an idle keep-alive connection ends after uvicorn's
    ``timeout_keep_alive`` (5 s) or this, whichever comes first. Pass the result as
    ``uvicorn.Config(http=...)``."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderTimeoutProtocol(H11Protocol):
        _header_timer: Any = None
        _waiting_since = 0.0  # when this connection began waiting for a request's headers

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._waiting_since = self.loop.time()
            self._header_timer = self.loop.call_later(seconds, self._check_headers)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._waiting_since = self.loop.time()  # the next request's headers are due from now

        def _waiting_for_headers(self) -> bool:
            return self.cycle is None or self.cycle.response_complete

        def _check_headers(self) -> None:
            self._header_timer = None
            if self.transport.is_closing():
                return
            late = self.loop.time() - self._waiting_since
            if self._waiting_for_headers() and late >= seconds:
                self.transport.close()
                return
            # a request in progress (its body and answer are the app's business), or headers not yet due
            again = seconds - late if self._waiting_for_headers() else seconds
            self._header_timer = self.loop.call_later(max(again, 0.01), self._check_headers)

        def connection_lost(self, exc: Exception | None) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None
            super().connection_lost(exc)

    return HeaderTimeoutProtocol
