"""A small real MCP server whose tool list changes at run time.

`enable_translation` adds a `translate_text` tool, `reword_translation` gives it another
description, `disable_translation` removes it; each announces the change with
`notifications/tools/list_changed` (on a `subscriptions/listen` stream for 2026-era
clients, as a session notification for handshake-era clients).
Run: python -m tests.support.mcp_servers.changing
"""
from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("changing", log_level="ERROR")


def translate_text(text: str, target_language: str) -> str:
    """Translate a text into another language (toy: tags the text with the language)."""
    return f"[{target_language}] {text}"


async def _has_translation() -> bool:
    return any(t.name == "translate_text" for t in await server.list_tools())


async def _announce(ctx: Context) -> None:
    await ctx.notify_tools_changed()
    try:  # handshake-era clients hear about it on the session itself
        await ctx.session.send_tool_list_changed()
    except Exception:  # noqa: BLE001 - 2026-era sessions carry change events only on listen streams
        pass


@server.tool()
async def enable_translation(ctx: Context) -> str:
    """Turn on the translation feature (adds the translate_text tool)."""
    if not await _has_translation():
        server.add_tool(translate_text)
    await _announce(ctx)
    return "translation enabled"


@server.tool()
async def reword_translation(ctx: Context) -> str:
    """Give the translation tool a new description (a tool edited in place)."""
    if await _has_translation():
        server.remove_tool("translate_text")
    server.add_tool(translate_text, description="Render a passage in a foreign tongue, such as French or Japanese.")
    await _announce(ctx)
    return "translation reworded"


@server.tool()
async def disable_translation(ctx: Context) -> str:
    """Turn off the translation feature (removes the translate_text tool)."""
    if await _has_translation():
        server.remove_tool("translate_text")
    await _announce(ctx)
    return "translation disabled"


if __name__ == "__main__":
    server.run()
