"""The MCP gateway's upstream side: one live connection per server of the `mcpServers` config.

Each upstream runs in its own task for the gateway's whole life, because an MCP client
connection (and the subprocess behind a stdio server) must be opened and closed in the
same task. A server that fails to start, or dies later, is marked unavailable with the
reason (for a stdio server, with its own last stderr line); it never takes the gateway or
the other upstreams down with it. A stdio server's stderr reaches ours labelled with its
name (`upstream_stderr`). The config itself is `router.gateway.config`.

`mcp` is imported only inside the functions that connect.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import anyio

from .config import UpstreamSpec, load_config, parse_config  # noqa: F401 - also importable from here
from .errors import GatewayError  # noqa: F401 - also importable from here
from .upstream_stderr import StderrTap

log = logging.getLogger("toolsift.mcp")

ChangeHook = Callable[["Upstream"], Awaitable[None]]


class Upstream:
    """One upstream MCP server: connect, list tools, forward calls, follow list changes.

    ``status`` is "starting", "ready", "failed" (never came up) or "dead" (went away);
    ``error`` says why when it is not ready. ``on_change(upstream)`` runs after every
    successful ``tools/list``: the first one, and each one a ``list_changed`` triggers.
    """

    def __init__(self, spec: UpstreamSpec, on_change: ChangeHook | None = None, *,
                 start_timeout: float = 30.0, call_timeout: float = 120.0) -> None:
        self.spec = spec
        self.name = spec.name
        self.status = "starting"
        self.error: str | None = None
        self.tools: list[dict[str, Any]] = []  # tools/list items, exactly as the server sent them
        self.settled = anyio.Event()           # set once ready or failed
        self._on_change = on_change
        self._start_timeout = start_timeout
        self._call_timeout = call_timeout
        self._client: Any = None
        self._changed = anyio.Event()
        self._stop = anyio.Event()
        self._started_at: float | None = None
        self._stderr: StderrTap | None = None

    # -- lifecycle -------------------------------------------------------------------
    async def run(self) -> None:
        """Serve this upstream until `stop()`; never raises (failures become `status`)."""
        self._started_at = anyio.current_time()
        if self.spec.command:
            self._stderr = StderrTap(self.name)
        try:
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._watchdog, scope)
                    await self._connected_life()
                    tg.cancel_scope.cancel()
        except Exception as exc:  # noqa: BLE001 - any upstream failure is reported, not propagated
            self._fail(await self._explain(_reason(exc)))
        else:
            if self.status == "starting":
                self._fail(await self._explain(f"did not start within {self._start_timeout:g} s"))
        finally:
            self._client = None
            if self.status == "ready":
                self.status, self.error = "dead", self.error or "connection closed"
            if self._stderr is not None:
                self._stderr.close()
            self.settled.set()

    async def _explain(self, reason: str) -> str:
        """A stdio server usually says why it quit on stderr ("Connection closed" alone does not)."""
        if self._stderr is None:
            return reason
        if self.status == "starting":
            reason = f"exited during start-up ({reason})" if "closed" in reason.lower() else reason
        return await self._stderr.explain(reason)

    def waiting(self) -> str:
        """What a server that has not answered yet is doing, for clients and status."""
        since = anyio.current_time() - self._started_at if self._started_at is not None else 0.0
        return (f"starting: no answer after {since:.0f} s (the gateway serves the others meanwhile and "
                f"gives up on it at {self._start_timeout:g} s)")

    async def _watchdog(self, scope: anyio.CancelScope) -> None:
        await anyio.sleep(self._start_timeout)
        if self.status == "starting":
            scope.cancel()

    async def _connected_life(self) -> None:
        async with AsyncExitStack() as stack:
            client = await stack.enter_async_context(self._make_client(stack))
            if self._stderr is not None:
                self._stderr.release_writer()  # the server holds its own end now
            await self._relist(client)
            self._client = client
            self.status = "ready"
            self.settled.set()
            log.info("upstream %s ready: %d tools", self.name, len(self.tools))
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._listen, client)
                tg.start_soon(self._follow_changes, client)
                await self._stop.wait()
                tg.cancel_scope.cancel()

    def _make_client(self, stack: AsyncExitStack) -> Any:
        from mcp import Client, StdioServerParameters

        async def on_message(message: Any) -> None:
            # Handshake-era servers send list_changed on the session itself.
            if getattr(message, "method", None) == "notifications/tools/list_changed":
                self._changed.set()

        if self.spec.url:
            if self.spec.headers:  # e.g. an Authorization header: needs our own HTTP client
                from mcp.client.streamable_http import streamable_http_client
                from mcp.shared._httpx_utils import create_mcp_http_client

                http = stack.push_async_exit(create_mcp_http_client(headers=self.spec.headers))
                transport = streamable_http_client(self.spec.url, http_client=http)
                return Client(transport, message_handler=on_message)
            return Client(self.spec.url, message_handler=on_message)
        from mcp.client.stdio import stdio_client

        # The SDK passes only a few safe variables of our environment, plus `env`
        # (router.gateway.config says why and how to pass more).
        env = {**os.environ, **self.spec.env} if self.spec.inherit_env else dict(self.spec.env)
        params = StdioServerParameters(command=self.spec.command or "", args=list(self.spec.args),
                                       env=env or None, cwd=self.spec.cwd)
        writer = self._stderr.writer if self._stderr is not None else None
        transport = stdio_client(params, errlog=writer) if writer is not None else stdio_client(params)
        return Client(transport, message_handler=on_message)

    async def _listen(self, client: Any) -> None:
        """2026-era servers deliver change events on a `subscriptions/listen` stream."""
        from mcp.client.subscriptions import ListenNotSupportedError

        caps = client.server_capabilities.tools
        if caps is None or not caps.list_changed:
            return
        try:
            async with client.listen(tools_list_changed=True) as sub:
                async for _event in sub:
                    self._changed.set()
        except ListenNotSupportedError:
            return  # handshake era: on_message gets the notification instead
        except Exception as exc:  # noqa: BLE001 - a lost stream usually means the server went away
            log.info("upstream %s: change stream ended (%s)", self.name, _reason(exc))

    async def _follow_changes(self, client: Any) -> None:
        if self._on_change is not None:  # the first listing
            await self._on_change(self)
        while True:
            await self._changed.wait()
            self._changed = anyio.Event()
            try:
                await self._relist(client)
            except Exception as exc:  # noqa: BLE001
                log.warning("upstream %s: re-listing tools failed: %s", self.name, _reason(exc))
                continue
            if self._on_change is not None:
                await self._on_change(self)

    async def _relist(self, client: Any) -> None:
        tools, cursor = [], None
        for _ in range(1000):  # a paginator that never ends cannot hang the gateway
            page = await client.list_tools(cursor=cursor, cache_mode="refresh")
            tools += [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in page.tools]
            cursor = page.next_cursor
            if not cursor:
                break
        self.tools = tools

    def stop(self) -> None:
        self._stop.set()

    def _fail(self, reason: str) -> None:
        if self.status == "dead" and self.error:
            return  # already explained (e.g. died during a call); keep the first reason
        self.status = "failed" if self.status == "starting" else "dead"
        self.error = reason
        log.warning("upstream %s %s: %s", self.name, self.status, reason)

    # -- calls -----------------------------------------------------------------------
    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """Forward one call; returns the upstream's `CallToolResult`.

        Raises `UpstreamUnavailable` when the server is down or dies during the call.
        """
        client = self._client
        if client is None or self.status != "ready":
            raise UpstreamUnavailable(self.name, self.error or self.status)
        try:
            with anyio.fail_after(self._call_timeout):
                return await client.call_tool(tool, arguments)
        except TimeoutError:
            raise UpstreamUnavailable(self.name, f"no answer within {self._call_timeout:g} s") from None
        except Exception as exc:
            from mcp.shared.exceptions import MCPError

            reason = _reason(exc)
            if isinstance(exc, MCPError) and exc.code != -32000:  # a protocol error, server still alive
                raise UpstreamUnavailable(self.name, reason, alive=True) from None
            self.status, self.error = "dead", f"died during a call to {tool!r} ({reason})"
            self._client = None
            self.stop()
            self.error = await self._explain(self.error)
            raise UpstreamUnavailable(self.name, self.error) from None

    def info(self) -> dict[str, Any]:
        out = {"server": self.name, "transport": self.spec.transport, "target": self.spec.describe(),
               "status": self.status, "tools": len(self.tools)}
        if self.error:
            out["error"] = self.error
        elif self.status == "starting":
            out["waiting"] = self.waiting()
        return out


class UpstreamUnavailable(Exception):
    """A call could not be served by its upstream (down, dead, or protocol error)."""

    def __init__(self, server: str, reason: str, *, alive: bool = False) -> None:
        self.server, self.reason, self.alive = server, reason, alive
        super().__init__(f"upstream {server!r} {'error' if alive else 'is unavailable'}: {reason}")


def _reason(exc: BaseException) -> str:
    """A one-line reason, unwrapping the exception groups task groups produce."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, FileNotFoundError):
        text = f"command not found ({exc.filename or text})"
    return text.splitlines()[0][:300]
