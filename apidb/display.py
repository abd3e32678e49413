"""Catalog data on a terminal: control characters escaped, never interpreted.

Tool names, descriptions and ids come from files anyone can write. Printed raw, an
ESC sequence can clear the screen or retitle the window, a bidi override (U+202E) can
make ``exe.png`` read as ``gnp.exe``, and ``[bold]`` is markup to rich. Everything the
CLI prints from the catalog passes through `printable` (text) or `json_text` (JSON),
which write such characters as visible escapes: ``\\x1b``, ``\\u202e``.
"""
from __future__ import annotations

import json
import re
from typing import Any

# C0 and C1 controls and DEL; Unicode format characters that reorder or hide text
# (bidi embeddings/overrides/isolates, zero-width spaces and marks, BOM, interlinear
# annotations); line/paragraph separators; lone surrogates (unencodable).
_C0 = "\x00-\x1f"
_OTHERS = ("\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f"
           "\ufeff\ufff9-\ufffb\ud800-\udfff")
_UNSAFE = re.compile(f"[{_C0}{_OTHERS}]")
# json.dumps has already escaped C0 (and quotes and backslashes); the others remain raw
_UNSAFE_IN_JSON = re.compile(f"[{_OTHERS}]")


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _json_escape(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"


def printable(text: Any) -> str:
    """``text`` with control and reordering characters written as escapes."""
    text = text if isinstance(text, str) else str(text)
    if text.isascii() and text.isprintable():  # the common case costs one scan
        return text
    return _UNSAFE.sub(_escape, text)


def json_text(value: Any, **kwargs: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)``, with every character `printable` would
    escape written as a ``\\uXXXX`` escape: the same JSON value, safe on a terminal, and
    encodable even when a string holds a lone surrogate."""
    text = json.dumps(value, ensure_ascii=False, **kwargs)
    return text if text.isascii() and text.isprintable() else _UNSAFE_IN_JSON.sub(_json_escape, text)
