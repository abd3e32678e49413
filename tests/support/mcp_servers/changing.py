"""A small real MCP server whose tool list changes at run time.

Calling `enable_translation` adds a `translate_text` tool and announces it with
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


@server.tool()
async def enable_translation(ctx: Context) -> str:
    """Turn on the translation feature (adds the translate_text tool)."""
    if not any(t.name == "translate_text" for t in await server.list_tools()):
        server.add_tool(translate_text)
    await ctx.notify_tools_changed()
    try:  # handshake-era clients hear about it on the session itself
        await ctx.session.send_tool_list_changed()
    except Exception:  # noqa: BLE001 - 2026-era sessions carry change events only on listen streams
        pass
    return "translation enabled"


if __name__ == "__main__":
    server.run()
