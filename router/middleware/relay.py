"""The proxy's streamed answers and its error bodies.

A stream is relayed line by line as it arrives; the API's stream watcher (checks.StreamAssembler,
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
        return StreamingResponse(self._relay(r, ex, rec, t0), media_type="text/event-stream", headers=out)

    async def _relay(self, r, ex: Exchange, rec: dict, t0: float):
        import httpx

        watch, said, remembered = ex.api.stream(), False, False
        try:
            async for line in r.aiter_lines():
                if not said and watch.is_end(line):
                    said = True
                    yield self._verdict_comment(ex, watch)
                watch.feed_line(line)
                if ex.api is RESPONSES and not remembered and getattr(watch, "final", None) is not None:
                    # before the client sees the end: its next request may name this response at once
                    remembered = True
                    ex.memory.remember(ex.routed.body, watch.response())
                yield (line + "\n").encode()
            if not said:
                yield self._verdict_comment(ex, watch)
        except httpx.TimeoutException:
            rec["error"] = "upstream timeout mid-stream"
            yield sse_error(f"upstream stopped sending for {self.timeout:g} s", "upstream_timeout")
        except httpx.TransportError as exc:
            rec["error"] = f"upstream connection lost mid-stream: {type(exc).__name__}"
            yield sse_error(rec["error"], "upstream_unreachable")
        finally:
            # sync work first: a client that hangs up after the end cancels this generator at its next await
            if not said:
                self._check_stream(ex, watch)
            self.finish(rec, t0, 200, ex)
            await r.aclose()

    def _check_stream(self, ex: Exchange, watch: Any) -> None:
        try:
            ex.check_streamed(watch.response())
        except Exception:  # a checker failure must not break a stream already under way
            log.exception("toolsift proxy: checking a streamed answer failed")

    def _verdict_comment(self, ex: Exchange, watch: Any) -> bytes:
        self._check_stream(ex, watch)
        return f": toolsift-verdicts {verdicts_header(ex.checks)}\n\n".encode()

