"""Drop-in wrapper for ``openai.OpenAI`` / ``openai.AsyncOpenAI``: route tools, check calls.

    client = wrap(OpenAI(), router="catalog.db", k=5, on_hallucination="repair")
    resp = client.chat.completions.create(model=..., messages=..., tools=all_my_tools)
    resp.toolsift.selected, resp.toolsift.verdicts

``chat.completions.create`` keeps its signature; everything else is the wrapped client's own.
Streams (``stream=True``) pass chunks through as they arrive; their calls are checked once the
stream ends (``stream.toolsift`` is set then; ``"raise"`` raises then). A streamed answer has
already been delivered, so it is annotated, not repaired.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .checks import CLIENT_MODES, CallCheck, Exchange, StreamAssembler, check_answer, check_mode
from .errors import HallucinatedCallError
from .request import RequestRouter, as_dict


_OPTIONS = ("extra_headers", "extra_query", "extra_body", "timeout")


@dataclass
class Annotation:
    """What toolsift did to one request; attached to the response as ``.toolsift``."""

    selected: list[dict]
    tools_in: int
    tools_out: int
    injected: bool = False
    checks: list[CallCheck] = field(default_factory=list)
    repairs: int = 0

    @property
    def verdicts(self) -> list[Any]:
        return [c.verdict for c in self.checks]

    @property
    def ok(self) -> bool:
        return all(c.verdict.ok for c in self.checks)

    def to_dict(self) -> dict:
        return {"selected": self.selected, "tools_in": self.tools_in, "tools_out": self.tools_out,
                "injected": self.injected, "verdicts": [c.to_dict() for c in self.checks], "repairs": self.repairs}


def wrap(client: Any, router: Any = None, *, k: int = 5, on_hallucination: str = "annotate", max_repairs: int = 2,
         pinned: tuple[str, ...] | list[str] = (), token_budget: int | None = None, method: str = "hybrid",
         model: str | None = None, cache_dir: str | None = None) -> Any:
    """Wrap an OpenAI client. ``router``: a `router.Router`, a catalog path, or None (route
    only the tools each request carries; no injection)."""
    check_mode(on_hallucination, CLIENT_MODES)
    if isinstance(router, (str, Path)):
        from router.engine import Router

        router = Router.open(router)
    rr = RequestRouter(router, k=k, pinned=pinned, token_budget=token_budget, method=method, model=model,
                       cache_dir=cache_dir)
    is_async = _is_async(client)
    return _Wrapped(client, rr, on_hallucination, max_repairs, is_async)


def _is_async(client: Any) -> bool:
    import inspect

    try:
        import openai

        if isinstance(client, openai.AsyncOpenAI):
            return True
        if isinstance(client, openai.OpenAI):
            return False
    except ImportError:
        pass
    # openai decorates create(); look through the decorators (also covers look-alike clients)
    return inspect.iscoroutinefunction(inspect.unwrap(client.chat.completions.create))


class _Wrapped:
    """The client with ``chat.completions.create`` replaced; every other attribute is the client's."""

    def __init__(self, client: Any, rr: RequestRouter, mode: str, max_repairs: int, is_async: bool) -> None:
        self._client, self.toolsift_router = client, rr
        completions = (_AsyncCompletions if is_async else _Completions)(client.chat.completions, rr, mode, max_repairs)
        self.chat = _Namespace(client.chat, completions=completions)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class _Namespace:
    def __init__(self, inner: Any, **overrides: Any) -> None:
        self._inner = inner
        self.__dict__.update(overrides)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _split(kwargs: dict) -> tuple[dict, dict]:
    """Request body fields vs client options; openai's NOT_GIVEN / omit markers are dropped."""
    body, options = {}, {}
    for key, value in kwargs.items():
        if type(value).__name__ in ("NotGiven", "Omit"):
            continue
        (options if key in _OPTIONS else body)[key] = value
    body = {**body, **as_dict({k: body[k] for k in ("messages", "tools", "tool_choice") if k in body})}
    return body, options


def _annotate(obj: Any, ex: Exchange) -> Any:
    r = ex.routed
    ann = Annotation(r.selected, r.tools_in, r.tools_out, r.injected, ex.checks, ex.repairs)
    object.__setattr__(obj, "toolsift", ann)  # not a model field: stays out of model_dump()
    return obj


def _finish(ex: Exchange, mode: str) -> Any:
    _annotate(ex.response, ex)
    if mode == "raise" and ex.failed:
        raise HallucinatedCallError(ex.checks, ex.response)
    return ex.response


class _Completions(_Namespace):
    def __init__(self, inner: Any, rr: RequestRouter, mode: str, max_repairs: int) -> None:
        super().__init__(inner)
        self._rr, self._mode, self._max = rr, mode, max_repairs

    def create(self, **kwargs: Any) -> Any:
        body, options = _split(kwargs)
        ex = Exchange(self._rr, body, self._mode, self._max)
        send = ex.start()
        if send.get("stream"):
            return _Stream(self._inner.create(**send, **options), ex, self._mode)
        while send is not None:
            send = ex.feed(self._inner.create(**send, **options))
        return _finish(ex, self._mode)


class _AsyncCompletions(_Completions):
    async def create(self, **kwargs: Any) -> Any:  # type: ignore[override]
        body, options = _split(kwargs)
        ex = Exchange(self._rr, body, self._mode, self._max)
        send = await asyncio.to_thread(ex.start)  # ranking is CPU work: keep the event loop free
        if send.get("stream"):
            return _AsyncStream(await self._inner.create(**send, **options), ex, self._mode)
        while send is not None:
            resp = await self._inner.create(**send, **options)
            send = await asyncio.to_thread(ex.feed, resp)
        return _finish(ex, self._mode)


class _StreamBase:
    """Chunks pass through untouched; the assembled calls are checked when the stream ends."""

    def __init__(self, inner: Any, ex: Exchange, mode: str) -> None:
        self._inner, self._ex, self._mode = inner, ex, mode
        self._asm = StreamAssembler()
        self.toolsift: Annotation | None = None

    def _done(self) -> None:
        if self.toolsift is not None:
            return
        self._ex.response = self._asm.response()
        self._ex.checks = check_answer(self._ex.response, self._ex.routed)
        r = self._ex.routed
        self.toolsift = Annotation(r.selected, r.tools_in, r.tools_out, r.injected, self._ex.checks)
        if self._mode == "raise" and self._ex.failed:
            raise HallucinatedCallError(self._ex.checks, self._ex.response)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Stream(_StreamBase):
    def __iter__(self):
        for chunk in self._inner:
            self._asm.feed(chunk)
            yield chunk
        self._done()

    def __enter__(self) -> "_Stream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._inner.close()


class _AsyncStream(_StreamBase):
    async def __aiter__(self):
        async for chunk in self._inner:
            self._asm.feed(chunk)
            yield chunk
        self._done()

    async def __aenter__(self) -> "_AsyncStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self._inner.close()
