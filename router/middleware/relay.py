"""The proxy's streamed answers and its error bodies.

A stream is relayed line by line as it arrives; the API's stream watcher (streamed.StreamAssembler,
responses.ResponsesStream, messages.MessagesStream) rebuilds the calls and says which line ends the
stream, and the verdicts go in an SSE comment just before it (clients ignore comments). Streamed
answers are annotated, never repaired or rejected: they were delivered already.
"""
# no `from __future__ import annotations`: kept like proxy.py, whose FastAPI handlers need real types

import json
import logging
from typing import Any, Optional

from .checks import CHAT, Api, Exchange, verdicts_header
from .messages import MESSAGES
from .responses import RESPONSES
from .search_stream import search_events
from .upstream import response_headers

log = logging.getLogger("toolsift.proxy")


def error_response(status: int, message: str, kind: str = "toolsift_error", api: Api = CHAT, headers: Optional[dict] = None,
           **extra: Any):
    """An error in the API's own shape, so that each client raises its own exception type."""
    from fastapi.responses import JSONResponse

    if api is MESSAGES:
        body = {"type": "error", "error": {"type": kind, "message": message, **extra}}
    else:
        body = {"error": {"message": message, "type": kind, "code": kind, **extra}}
    return JSONResponse(body, status_code=status, headers=headers)


def sse_error(message: str, kind: str) -> bytes:
    return f"data: {json.dumps({'error': {'message': message, 'type': kind, 'code': kind}})}\n\n".encode()



class _RoundFailed(Exception):
    pass


class StreamRelay:
    """The streaming half of `proxy.Proxy` (which provides post_upstream, toolsift_headers,
    finish, memory and timeout)."""

    async def stream(self, send: dict, headers: dict[str, str], ex: Exchange, rec: dict, t0: float):
        from fastapi.responses import Response, StreamingResponse

        r, err = await self.post_upstream(ex.api, send, headers, stream=True)
        if err is not None:
            return err
        if r.status_code != 200:
            content = await r.aread()
            await r.aclose()
            return Response(content, status_code=r.status_code,
                            headers={**response_headers(r.headers), **self.toolsift_headers(ex, False)})
        out = {**response_headers(r.headers), **self.toolsift_headers(ex, False), "cache-control": "no-cache"}
        out.pop("content-type", None)
        return StreamingResponse(self._relay(r, ex, rec, t0, headers), media_type="text/event-stream", headers=out)

    async def _relay(self, r, ex: Exchange, rec: dict, t0: float, headers: Optional[dict] = None):
        import httpx

        watch, said, remembered = ex.api.stream(), False, False
        rewrite = None  # the provider's search blocks put into the stream (search_stream.py)
        try:
            lines = None
            if ex.searching:  # nothing reaches the client until the answer is known not to be a search
                r, watch, lines = await self._search_rounds(r, ex, rec, headers or {})
            rewrite = search_events(ex)
            if lines is not None:
                for line in watch.held:
                    for out in rewrite.feed(line) if rewrite is not None else (line,):
                        if not said and watch.is_end(out):
                            said = True
                            yield self._verdict_comment(ex, watch)
                        yield (out + "\n").encode()
            async for line in lines if lines is not None else r.aiter_lines():
                outs = rewrite.feed(line) if rewrite is not None else (line,)
                if not said and any(watch.is_end(out) for out in outs):
                    said = True
                    yield self._verdict_comment(ex, watch)  # (of the answer up to its end)
                watch.feed_line(line)
                if ex.api is RESPONSES and not remembered and getattr(watch, "final", None) is not None:
                    # before the client sees the end: its next request may name this response at once
                    remembered = True
                    ex.remember(watch.response())
                    if ex.deferral is not None and ex.memory is not None:  # and what its searches loaded (proxy.py)
                        ex.memory.remember_loaded(watch.final.get("id"), [
                            *ex.deferral.loaded, *(n for _, names in ex.search_log for n in names)])
                for out in outs:
                    yield (out + "\n").encode()
            for out in rewrite.flush() if rewrite is not None else ():
                yield (out + "\n").encode()
            if not said:
                yield self._verdict_comment(ex, watch)
        except httpx.TimeoutException:
            rec["error"] = "upstream timeout mid-stream"
            yield sse_error(f"upstream stopped sending for {self.timeout:g} s", "upstream_timeout")
        except httpx.TransportError as exc:
            rec["error"] = f"upstream connection lost mid-stream: {type(exc).__name__}"
            yield sse_error(rec["error"], "upstream_unreachable")
        except _RoundFailed as exc:
            rec["error"] = str(exc)
            yield sse_error(str(exc), "upstream_error")
        finally:
            # sync work first: a client that hangs up after the end cancels this generator at its next await
            if not said:
                self._check_stream(ex, watch)
            self.finish(rec, t0, 200, ex)
            if r is not None:
                await r.aclose()

    async def _search_rounds(self, r, ex: Exchange, rec: dict, headers: dict):
        """Read the stream until its answer is known (router/middleware/search.py): a search call is
        read to its end, answered, and the next round streamed; anything else is the answer. Returns
        the upstream response still streaming, its watcher (whose ``held`` lines are not sent yet)
        and the line iterator to go on with."""
        from .search import SEARCH_NAME

        while True:
            watch = ex.api.stream()
            watch.held = []
            lines = r.aiter_lines()
            decision = None
            async for line in lines:
                watch.feed_line(line)
                watch.held.append(line)
                decision = watch.decision(SEARCH_NAME)
                if decision is not None:
                    break
            if decision != "search":
                return r, watch, lines
            async for line in lines:  # the rest of the search call
                watch.feed_line(line)
            await r.aclose()
            send = ex.feed(watch.response())
            r, err = await self.post_upstream(ex.api, send, headers, stream=True)
            if err is not None or r.status_code != 200:
                if r is not None:
                    await r.aclose()
                raise _RoundFailed(f"upstream failed during a tool search round: "
                                   f"{'no answer' if r is None else r.status_code}")
            if not ex.searching:  # the last round: no search tool offered, relay as usual
                watch = ex.api.stream()
                watch.held = []
                return r, watch, r.aiter_lines()

    def _check_stream(self, ex: Exchange, watch: Any) -> None:
        try:
            ex.check_streamed(watch.response())
        except Exception:  # a checker failure must not break a stream already under way
            log.exception("toolsift proxy: checking a streamed answer failed")

    def _verdict_comment(self, ex: Exchange, watch: Any) -> bytes:
        self._check_stream(ex, watch)
        return f": toolsift-verdicts {verdicts_header(ex.checks)}\n\n".encode()

