"""The MCP gateway's upstream side: the `mcpServers` config and one live connection per server.

Each upstream runs in its own task for the gateway's whole life, because an MCP client
connection (and the subprocess behind a stdio server) must be opened and closed in the
same task. A server that fails to start, or dies later, is marked unavailable with the
reason; it never takes the gateway or the other upstreams down with it.

`mcp` is imported only inside the functions that connect.
"""
from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from .errors import GatewayError

log = logging.getLogger("toolsift.mcp")

# Server names become catalog namespaces and the `server__tool` prefix, so they must
# not contain the id separator "/" nor the qualifier "__".
_SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class UpstreamSpec:
    """One entry of the `mcpServers` config: a stdio command or a streamable-HTTP URL."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    def describe(self) -> str:
        return self.url or " ".join([self.command or "", *self.args]).strip()


def load_config(path: str | Path) -> list[UpstreamSpec]:
    """Read a config file in the common `{"mcpServers": {NAME: {...}}}` shape."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GatewayError(f"{path}: no such config file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise GatewayError(f"{path}: cannot read config ({exc})") from None
    except json.JSONDecodeError as exc:
        raise GatewayError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    return parse_config(data, source=str(path))


def parse_config(data: Any, source: str = "config") -> list[UpstreamSpec]:
    """Validate a parsed config; every problem names the server and the field."""
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise GatewayError(f"{source}: expected an object with a 'mcpServers' mapping of server name -> settings")
    specs = []
    for name, entry in servers.items():
        where = f"{source}: server {name!r}"
        if not _SERVER_NAME.match(name) or "__" in name:
            raise GatewayError(f"{where}: names may use letters, digits, '.', '-', '_' (no '__'; it separates "
                               "server and tool in 'server__tool')")
        if not isinstance(entry, dict):
            raise GatewayError(f"{where}: expected an object with 'command' or 'url'")
        if entry.get("disabled") is True:
            continue
        specs.append(_spec(name, entry, where))
    if not specs:
        raise GatewayError(f"{source}: 'mcpServers' lists no (enabled) server")
    return specs


def _spec(name: str, entry: dict[str, Any], where: str) -> UpstreamSpec:
    command, url = entry.get("command"), entry.get("url")
    if bool(command) == bool(url):
        raise GatewayError(f"{where}: give exactly one of 'command' (stdio) or 'url' (streamable HTTP)")
    if url is not None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise GatewayError(f"{where}: field 'url' must be an http(s) URL")
        return UpstreamSpec(name=name, url=url, headers=_str_map(entry.get("headers"), where, "headers"))
    if not isinstance(command, str):
        raise GatewayError(f"{where}: field 'command' must be a string")
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise GatewayError(f"{where}: field 'args' must be a list of strings")
    cwd = entry.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise GatewayError(f"{where}: field 'cwd' must be a string")
    return UpstreamSpec(name=name, command=command, args=tuple(args),
                        env=_str_map(entry.get("env"), where, "env"), cwd=cwd)


def _str_map(value: Any, where: str, field_name: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise GatewayError(f"{where}: field {field_name!r} must map names to strings")
    return dict(value)


ChangeHook = Callable[["Upstream"], Awaitable[None]]


class Upstream:
    """One upstream MCP server: connect, list tools, forward calls, follow list changes.

    ``status`` is "starting", "ready", "failed" (never came up) or "dead" (went away);
    ``error`` says why when it is not ready.
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

    # -- lifecycle -------------------------------------------------------------------
    async def run(self) -> None:
        """Serve this upstream until `stop()`; never raises (failures become `status`)."""
        try:
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._watchdog, scope)
                    await self._connected_life()
                    tg.cancel_scope.cancel()
        except Exception as exc:  # noqa: BLE001 - any upstream failure is reported, not propagated
            self._fail(_reason(exc))
        else:
            if self.status == "starting":
                self._fail(f"did not start within {self._start_timeout:g} s")
        finally:
            self._client = None
            if self.status == "ready":
                self.status, self.error = "dead", self.error or "connection closed"
            self.settled.set()

    async def _watchdog(self, scope: anyio.CancelScope) -> None:
        await anyio.sleep(self._start_timeout)
        if self.status == "starting":
            scope.cancel()

    async def _connected_life(self) -> None:
        async with AsyncExitStack() as stack:
            client = await stack.enter_async_context(self._make_client(stack))
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
        params = StdioServerParameters(command=self.spec.command, args=list(self.spec.args),
                                       env=self.spec.env or None, cwd=self.spec.cwd)
        return Client(params, message_handler=on_message)

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
            raise UpstreamUnavailable(self.name, self.error) from None

    def info(self) -> dict[str, Any]:
        out = {"server": self.name, "transport": self.spec.transport, "target": self.spec.describe(),
               "status": self.status, "tools": len(self.tools)}
        if self.error:
            out["error"] = self.error
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
