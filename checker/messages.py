"""A verdict in words, for the model that made the call.

The middleware's repair turn, the reference loop's error tool message and the MCP gateway's
tool error all tell a model why its call was refused. They share these phrases so that the
three never drift apart; each caller only frames them (what happens next is theirs to say).
"""
from __future__ import annotations

from collections.abc import Iterable

from .verdict import Defect, Verdict


def defect_text(defects: Iterable[Defect], fallback: str = "", *, kinds: bool = True) -> str:
    """``"kind: message; kind: message"`` (or just the messages), else ``fallback``."""
    parts = [f"{d.kind}: {d.message}" if kinds else d.message for d in defects]
    return "; ".join(parts) or fallback


def verdict_text(verdict: Verdict) -> str:
    """Every defect of ``verdict`` with its kind, or the verdict's name when it has none."""
    return defect_text(verdict.defects, verdict.verdict)


def nearest_text(nearest: Iterable[str], already_said: str = "") -> str:
    """``"Nearest valid tools: a, b."``, or "" when there are none or ``already_said`` names them all
    (the checker's own message often does)."""
    names = list(nearest)
    if not names or all(n in already_said for n in names):
        return ""
    return "Nearest valid tools: " + ", ".join(names) + "."


def refusal(subject: str, verdict: Verdict, nearest: Iterable[str] = (), next_step: str = "") -> str:
    """One line: ``<subject> (<defects>). Nearest valid tools: ... <next_step>``."""
    text = verdict_text(verdict)
    parts = [f"{subject} ({text}).", nearest_text(nearest, text), next_step]
    return " ".join(p for p in parts if p)


def call_defects(verdict: Verdict, call_index: int) -> list[Defect]:
    """The defects that concern call ``call_index`` of a multi-call verdict (or all calls)."""
    return [d for d in verdict.defects if d.call_index in (call_index, None)]
