"""Drop-in wrapper for ``openai.OpenAI`` / ``openai.AsyncOpenAI``: route tools, check calls.

    client = wrap(OpenAI(), router="catalog.db", k=5, on_hallucination="repair")
    resp = client.chat.completions.create(model=..., messages=..., tools=all_my_tools)
    resp.toolsift.selected, resp.toolsift.verdicts

``chat.completions.create``, ``.parse``, ``.stream`` (the helper) and
``.with_raw_response.create`` keep their signatures and are all routed and checked; everything
else is the wrapped client's own. Streams (``stream=True``) pass chunks through as they arrive and
are real iterators (``next()``, ``for``, ``with``; ``async for`` / ``async with``); their calls
are checked once the stream ends (``stream.toolsift`` is set then; ``"raise"`` raises then). A
streamed answer has already been delivered, so it is annotated, not repaired.
"""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from .annotation import Annotation, _annotate, _annotation
from .checks import CLIENT_MODES, Exchange, check_mode
from .errors import HallucinatedCallError
from .request import RequestRouter
from .routed import as_dict
from .streamed import StreamAssembler


_OPTIONS = ("extra_headers", "extra_query", "extra_body", "timeout")


def wrap(client: Any, router: Any = None, *, k: int = 5, on_hallucination: str = "annotate", max_repairs: int = 2,
         pinned: tuple[str, ...] | list[str] = (), token_budget: int | None = None, method: str = "hybrid",
         model: str | None = None, cache_dir: str | None = None, inject: bool = False,
         tool_search: bool = False) -> Any:
    """Wrap an OpenAI client. ``router``: a `router.Router` or a catalog path (requests whose
    tools are catalog tools are ranked with its indexes), or None. ``inject=True`` also adds the
    top-k catalog tools to requests that bring none (off by default: an agent that gets a tool it
    never defined fails on the call). ``tool_search=True`` offers the model a search over the tools
    routing left out on requests that do not stream (router/middleware/search.py). ``cache_dir`` is accepted for compatibility: tool lists that
    come with requests are embedded in a bounded in-memory cache, never written to disk."""
    check_mode(on_hallucination, CLIENT_MODES)
    if isinstance(router, (str, Path)):
        from router.ranking.engine import Router

        router = Router.open(router)
    rr = RequestRouter(router, k=k, pinned=pinned, token_budget=token_budget, method=method, model=model,
                       cache_dir=cache_dir, inject=inject, tool_search=tool_search)
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
    """The client with ``chat.completions`` replaced; every other attribute is the client's."""

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


def _keep(options: dict) -> tuple[str, ...]:
    """Tool names a call marks as needed with ``extra_headers={"x-toolsift-keep": "a,b"}``."""
    value = next((v for k, v in (options.get("extra_headers") or {}).items() if k.lower() == "x-toolsift-keep"), "")
    return tuple(n.strip() for n in str(value or "").split(",") if n.strip())


def _finish(ex: Exchange, mode: str) -> Any:
    _annotate(ex.response, ex)
    if mode == "raise" and ex.failed:
        raise HallucinatedCallError(ex.checks, ex.response)
    return ex.response


class _Completions(_Namespace):
    def __init__(self, inner: Any, rr: RequestRouter, mode: str, max_repairs: int) -> None:
        super().__init__(inner)
        self._rr, self._mode, self._max = rr, mode, max_repairs
        self.with_raw_response = _RawCompletions(self)

    def _exchange(self, kwargs: dict, streaming: bool = False) -> tuple[Exchange, dict, dict]:
        body, options = _split(kwargs)
        ex = Exchange(self._rr, body, self._mode, self._max, keep=_keep(options), streaming=streaming)
        return ex, ex.start(), options

    def create(self, **kwargs: Any) -> Any:
        ex, send, options = self._exchange(kwargs)
        if send.get("stream"):
            return _Stream(self._inner.create(**send, **options), ex, self._mode)
        while send is not None:
            send = ex.feed(self._inner.create(**send, **options))
        return _finish(ex, self._mode)

    def parse(self, **kwargs: Any) -> Any:
        """``chat.completions.parse``: routed and checked like create."""
        ex, send, options = self._exchange(kwargs)
        while send is not None:
            send = ex.feed(self._inner.parse(**send, **options))
        return _finish(ex, self._mode)

    def stream(self, **kwargs: Any) -> "_StreamManager":
        """The ``chat.completions.stream()`` helper: routed; checked when the stream ends."""
        ex, send, options = self._exchange(kwargs, streaming=True)
        return _StreamManager(self._inner.stream(**send, **options), ex, self._mode)


class _RawCompletions:
    """``with_raw_response.create``: the raw response (headers ...), routed and checked; its
    ``parse()`` gives the annotated completion (or the wrapped stream)."""

    def __init__(self, outer: _Completions) -> None:
        self._outer = outer

    def create(self, **kwargs: Any) -> Any:
        outer = self._outer
        ex, send, options = outer._exchange(kwargs)
        raw_api = outer._inner.with_raw_response
        if send.get("stream"):
            raw = raw_api.create(**send, **options)
            return _Raw(raw, _Stream(raw.parse(), ex, outer._mode))
        while send is not None:
            raw = raw_api.create(**send, **options)
            send = ex.feed(raw.parse())
        return _Raw(raw, _finish(ex, outer._mode))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._outer._inner.with_raw_response, name)


class _Raw:
    def __init__(self, raw: Any, parsed: Any) -> None:
        self._raw, self._parsed = raw, parsed

    def parse(self, **_: Any) -> Any:
        return self._parsed

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


class _AsyncCompletions(_Completions):
    def __init__(self, inner: Any, rr: RequestRouter, mode: str, max_repairs: int) -> None:
        super().__init__(inner, rr, mode, max_repairs)
        self.with_raw_response = _AsyncRawCompletions(self)

    async def _aexchange(self, kwargs: dict) -> tuple[Exchange, dict, dict]:
        body, options = _split(kwargs)
        ex = Exchange(self._rr, body, self._mode, self._max, keep=_keep(options))
        send = await asyncio.to_thread(ex.start)  # ranking is CPU work: keep the event loop free
        return ex, send, options

    async def create(self, **kwargs: Any) -> Any:  # type: ignore[override]
        ex, send, options = await self._aexchange(kwargs)
        if send.get("stream"):
            return _AsyncStream(await self._inner.create(**send, **options), ex, self._mode)
        while send is not None:
            resp = await self._inner.create(**send, **options)
            send = await asyncio.to_thread(ex.feed, resp)
        return _finish(ex, self._mode)

    async def parse(self, **kwargs: Any) -> Any:  # type: ignore[override]
        ex, send, options = await self._aexchange(kwargs)
        while send is not None:
            resp = await self._inner.parse(**send, **options)
            send = await asyncio.to_thread(ex.feed, resp)
        return _finish(ex, self._mode)

    def stream(self, **kwargs: Any) -> "_AsyncStreamManager":  # type: ignore[override]
        # openai's async stream() is a plain function returning an async context manager
        ex, send, options = self._exchange(kwargs)
        return _AsyncStreamManager(self._inner.stream(**send, **options), ex, self._mode)


class _AsyncRawCompletions(_RawCompletions):
    async def create(self, **kwargs: Any) -> Any:  # type: ignore[override]
        outer = self._outer
        ex, send, options = await outer._aexchange(kwargs)
        raw_api = outer._inner.with_raw_response
        if send.get("stream"):
            raw = await raw_api.create(**send, **options)
            return _raw_like(raw, _AsyncStream(await _parsed(raw), ex, outer._mode))
        while send is not None:
            raw = await raw_api.create(**send, **options)
            send = await asyncio.to_thread(ex.feed, await _parsed(raw))
        return _raw_like(raw, _finish(ex, outer._mode))


async def _parsed(raw: Any) -> Any:
    """``raw.parse()``, awaited when this openai version makes it a coroutine."""
    import inspect

    out = raw.parse()
    return await out if inspect.isawaitable(out) else out


def _raw_like(raw: Any, parsed: Any) -> "_Raw":
    """A raw response whose parse() is sync or async like the wrapped one's."""
    import inspect

    return (_AsyncRaw if inspect.iscoroutinefunction(raw.parse) else _Raw)(raw, parsed)


class _AsyncRaw(_Raw):
    async def parse(self, **_: Any) -> Any:  # type: ignore[override]
        return self._parsed


class _StreamBase:
    """Chunks pass through untouched; the assembled calls are checked when the stream ends."""

    def __init__(self, inner: Any, ex: Exchange, mode: str) -> None:
        self._inner, self._ex, self._mode = inner, ex, mode
        self._asm = StreamAssembler()
        self.toolsift: Annotation | None = None

    def _done(self, response: Any = None) -> None:
        if self.toolsift is not None:
            return
        self._ex.check_streamed(response if response is not None else self._asm.response())
        self.toolsift = _annotation(self._ex)
        if self._mode == "raise" and self._ex.failed:
            raise HallucinatedCallError(self._ex.checks, self._ex.response)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Stream(_StreamBase):
    """An iterator like openai's Stream: ``next()``, ``for``, ``with``."""

    def __init__(self, inner: Any, ex: Exchange, mode: str) -> None:
        super().__init__(inner, ex, mode)
        self._it = iter(inner)

    def __iter__(self) -> "_Stream":
        return self

    def __next__(self) -> Any:
        try:
            chunk = next(self._it)
        except StopIteration:
            self._done()
            raise
        self._asm.feed(chunk)
        return chunk

    def __enter__(self) -> "_Stream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._inner.close()


class _AsyncStream(_StreamBase):
    def __init__(self, inner: Any, ex: Exchange, mode: str) -> None:
        super().__init__(inner, ex, mode)
        self._it = inner.__aiter__()

    def __aiter__(self) -> "_AsyncStream":
        return self

    async def __anext__(self) -> Any:
        try:
            chunk = await self._it.__anext__()
        except StopAsyncIteration:
            self._done()
            raise
        self._asm.feed(chunk)
        return chunk

    async def __aenter__(self) -> "_AsyncStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self._inner.close()


class _EventStream(_StreamBase):
    """openai's ChatCompletionStream (the ``.stream()`` helper's events), checked at its end from
    the helper's own final completion."""

    def __iter__(self):
        for event in self._inner:
            yield event
        self._done(self._inner.get_final_completion())

    def get_final_completion(self) -> Any:
        final = self._inner.get_final_completion()
        self._done(final)
        return _annotate(final, self._ex)

    def until_done(self) -> "_EventStream":
        self._inner.until_done()
        self._done(self._inner.get_final_completion())
        return self


class _AsyncEventStream(_StreamBase):
    async def __aiter__(self):
        async for event in self._inner:
            yield event
        self._done(await self._inner.get_final_completion())

    async def get_final_completion(self) -> Any:
        final = await self._inner.get_final_completion()
        self._done(final)
        return _annotate(final, self._ex)

    async def until_done(self) -> "_AsyncEventStream":
        await self._inner.until_done()
        self._done(await self._inner.get_final_completion())
        return self


class _StreamManager:
    def __init__(self, manager: Any, ex: Exchange, mode: str) -> None:
        self._manager, self._ex, self._mode = manager, ex, mode
        self.stream: _EventStream | None = None

    def __enter__(self) -> _EventStream:
        self.stream = _EventStream(self._manager.__enter__(), self._ex, self._mode)
        return self.stream

    def __exit__(self, *exc: Any) -> None:
        self._manager.__exit__(*exc)


class _AsyncStreamManager:
    def __init__(self, manager: Any, ex: Exchange, mode: str) -> None:
        self._manager, self._ex, self._mode = manager, ex, mode
        self.stream: _AsyncEventStream | None = None

    async def __aenter__(self) -> _AsyncEventStream:
        self.stream = _AsyncEventStream(await self._manager.__aenter__(), self._ex, self._mode)
        return self.stream

    async def __aexit__(self, *exc: Any) -> None:
        await self._manager.__aexit__(*exc)
