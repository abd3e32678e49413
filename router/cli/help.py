"""Help screens a newcomer can read: placeholders named for what they hold, and an example.

typer writes an option's value as its Python type (``--pin <list[str]>``, ``--port <int range>``,
``--out <path>``); every option without a metavar of its own gets one named for its meaning
here (``--pin TOOL``, ``-k N``, ``--db DB``), and every command's help ends with an example.
Choices (``--method <hybrid|bm25|dense>``) keep typer's list, which also drives completion.
"""
from __future__ import annotations

from typing import Any

__all__ = ["polish"]

# option or argument name -> placeholder (the default: the name in capitals)
PLACEHOLDERS = {
    "k": "N", "limit": "N", "epochs": "N", "max_request_tools": "N", "runs": "N", "size": "N",
    "db": "DB", "namespace": "NS", "exclude_namespace": "NS", "pin": "TOOL", "model": "MODEL",
    "index_dir": "DIR", "out": "DIR", "report": "DIR", "bfcl_data": "DIR",
    "min_score": "SCORE", "token_budget": "TOKENS", "relative_cut": "RATIO", "port": "PORT", "host": "HOST",
    "config": "FILE", "gold": "FILE", "answers": "FILE", "usage_log": "FILE", "queries": "FILE",
    "path": "FILE", "upstream": "URL", "encoder": "ENCODER", "start_timeout": "SECONDS", "ready_timeout": "SECONDS",
}

# command path -> an example shown at the end of its help
EXAMPLES = {
    "catalog add": "toolsift catalog add examples/tools.json openapi.yaml --db catalog.db",
    "catalog stats": "toolsift catalog stats --db catalog.db",
    "catalog list": "toolsift catalog list weather --namespace tools --db catalog.db",
    "catalog show": "toolsift catalog show get_weather --db catalog.db",
    "catalog remove": "toolsift catalog remove --namespace tools --db catalog.db",
    "index": "toolsift index --db catalog.db",
    "route": 'toolsift route "will it rain in Oslo tomorrow?" -k 3 --db catalog.db',
    "check": "toolsift check examples/calls.jsonl --db catalog.db --fail-on hallucinated,hallucinated_tool",
    "audit": ("toolsift audit examples/torchhub_responses.jsonl --namespace torchhub "
              "--gold examples/torchhub_gold.jsonl --db catalog.db"),
    "serve openai": "toolsift serve openai --db catalog.db --upstream https://api.openai.com/v1 -k 5",
    "serve anthropic": "toolsift serve anthropic --db catalog.db -k 5",
    "serve mcp": "toolsift serve mcp --config examples/mcp_servers.json -k 3",
    "tune": "toolsift tune --db catalog.db --queries examples/queries.jsonl --out tuned/",
    "cache info": "toolsift cache info",
    "cache clear": "toolsift cache clear --yes",
    "cache ship": "toolsift cache ship --db /tmp/g.db --out router/data/gorilla.vectors.npz",
    "tenants new-key": "toolsift tenants new-key",
    "tenants hash-key": 'printf %s "$KEY" | toolsift tenants hash-key',
    "tenants check": "toolsift tenants check tenants.toml --db catalog.db",
    "doctor": "toolsift doctor --db catalog.db",
    "demo": "toolsift demo",
}


def polish(command: Any, path: str = "") -> None:
    """Placeholders and examples for ``command`` (typer's click command) and every command below
    it. Duck-typed: typer carries a click of its own."""
    for param in command.params:
        if type(param).__name__.endswith("Argument"):
            _plain_argument(param)
            continue
        if param.metavar is not None or getattr(param, "is_flag", False) or param.name is None:
            continue
        if param.name in ("help", "install_completion", "show_completion") or not hasattr(param, "opts"):
            continue
        if type(param).__name__.endswith("Argument"):
            _plain_argument(param)
            continue
        if _is_choice(param):
            continue
        param.metavar = PLACEHOLDERS.get(param.name, param.name.upper())
    example = EXAMPLES.get(path)
    if example and not command.epilog:
        # after the options, as git and uv do; \b keeps click from re-flowing it
        command.epilog = f"\b\nExample:\n  {example}"
    for name, sub in (getattr(command, "commands", None) or {}).items():
        polish(sub, f"{path} {name}".strip())


def _plain_argument(param: Any) -> None:
    """An argument as click writes it: ``FILE`` in the usage line (typer wrote ``{path}``) and no
    Python type beside it in the list (``QUERY <str>``)."""
    if param.metavar is None:
        param.metavar = PLACEHOLDERS.get(param.name, (param.name or "arg").upper())
    name = param.metavar + ("..." if param.nargs != 1 else "")
    usage = name if param.required else f"[{name}]"
    param.display_type_rich = lambda ctx: None  # instance attributes: typer asks the parameter
    param._usage_display_name = lambda: usage


def _is_choice(param: Any) -> bool:
    if type(getattr(param, "type", None)).__name__ == "Choice":
        return True
    desc = getattr(param, "type_descriptor", None)  # typer's own options (Literal annotations)
    return bool(getattr(desc, "is_choice", False))
