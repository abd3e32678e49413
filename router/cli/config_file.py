"""A TOML settings file for the long-running commands (`serve openai`, `serve anthropic`).

    # toolsift.toml
    [serve]                      # every serve command
    db = "catalog.db"
    k = 8
    [serve.openai]               # only `toolsift serve openai` (overrides [serve])
    upstream = "https://api.openai.com/v1"
    on-hallucination = "repair"
    pin = ["get_weather"]

Keys are the command's long flags without the dashes (``on-hallucination`` or
``on_hallucination``). Flags given on the command line override the file; the file overrides the
built-in defaults. An unknown key, or a file that is not TOML, is one error line (exit 2): a typo
must not silently run a proxy with the default setting.
"""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Optional

import typer

from .errors import CliError

HELP = ("TOML settings file ([serve] and [serve.<command>] tables; keys are flag names); "
        "flags override it. Default: $TOOLSIFT_CONFIG.")


def _flag_names(command: Any) -> dict[str, str]:
    """'on-hallucination' / 'on_hallucination' / 'pin' -> the parameter's name."""
    names: dict[str, str] = {}
    for param in command.params:
        for opt in getattr(param, "opts", []):
            if opt.startswith("--"):
                flag = opt[2:]
                names[flag] = names[flag.replace("-", "_")] = param.name
    return names


def settings_for(path: Path, section: str, command: Any) -> dict[str, Any]:
    """The default map for ``command`` from the file: [serve], then [serve.<section>] over it."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise CliError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CliError(f"{path}: not a TOML file ({exc})") from None
    serve = data.get("serve", {})
    if not isinstance(serve, dict):
        raise CliError(f"{path}: [serve] must be a table")
    merged = {k: v for k, v in serve.items() if not isinstance(v, dict)}
    specific = serve.get(section, {})
    if not isinstance(specific, dict):
        raise CliError(f"{path}: [serve.{section}] must be a table")
    merged.update(specific)
    names = _flag_names(command)
    out: dict[str, Any] = {}
    for key, value in merged.items():
        if key not in names or names[key] == "config":
            known = ", ".join(sorted(k for k in names if "_" not in k and k != "config"))
            raise CliError(f"{path}: unknown setting {key!r} for serve {section} (known: {known})")
        out[names[key]] = value
    return out


def config_option(section: str):  # noqa: ANN201 - a typer OptionInfo
    """A ``--config FILE`` option whose file becomes the command's defaults (see the module doc)."""

    def load(ctx: typer.Context, param: typer.CallbackParam, value: Optional[Path]) -> Optional[Path]:
        if value is not None:
            ctx.default_map = {**(ctx.default_map or {}), **settings_for(value, section, ctx.command)}
        return value

    return typer.Option(None, "--config", is_eager=True, callback=load, envvar="TOOLSIFT_CONFIG",
                        expose_value=False, show_default=False, metavar="FILE.toml", help=HELP)
