"""The gateway's `mcpServers` config: one `UpstreamSpec` per server, every problem named.

Shape: ``{"mcpServers": {NAME: {"command", "args", "env", "cwd", "inheritEnv"} | {"url", "headers"}}}``;
``"disabled": true`` skips an entry. Server names follow `router.gateway.names` (they become
catalog namespaces and the ``server__`` prefix of qualified tool names).

Environment: the `mcp` SDK starts a stdio server with only a few safe variables of the
gateway's environment (HOME, LOGNAME, PATH, SHELL, TERM, USER on POSIX) plus the entry's
``env``; ``"inheritEnv": true`` (or ``toolsift serve mcp --inherit-env`` for every server)
passes the gateway's whole environment, with ``env`` on top. Secrets in the gateway's
environment therefore reach a server only when its entry asks for them.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import GatewayError
from .names import server_name_problem


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
    inherit_env: bool = False  # pass the gateway's whole environment (stdio), `env` on top

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
        problem = server_name_problem(name)
        if problem:
            raise GatewayError(f"{where}: {problem}")
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
    inherit = entry.get("inheritEnv", False)
    if not isinstance(inherit, bool):
        raise GatewayError(f"{where}: field 'inheritEnv' must be true or false")
    return UpstreamSpec(name=name, command=command, args=tuple(args),
                        env=_str_map(entry.get("env"), where, "env"), cwd=cwd, inherit_env=inherit)


def _str_map(value: Any, where: str, field_name: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise GatewayError(f"{where}: field {field_name!r} must map names to strings")
    return dict(value)
