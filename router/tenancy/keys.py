"""How a request presents its toolsift key, at the proxy and at the MCP gateway (issue 17).

Both ways in read the key from the same header, ``X-Toolsift-Key``. Without it:

- the proxy (`take_key`) takes the bearer token, or an Anthropic client's ``x-api-key``, as the
  toolsift key; that header is then *not* sent upstream, and ``$TOOLSIFT_UPSTREAM_API_KEY``
  authorizes the upstream call instead (for clients that can set only an API key and a base URL);
- the gateway (`presented_key`) takes the bearer token: it forwards no client header to the
  upstream servers, so the bearer can be the key itself.

Neither keeps a key: a presented key is hashed, compared with the tenants file's digests
(router.tenancy.tenants) and dropped.
"""
from __future__ import annotations

import os
from typing import Mapping

KEY_HEADER = "x-toolsift-key"
NAMESPACES_HEADER = "x-toolsift-namespaces"
UPSTREAM_KEY_ENV = "TOOLSIFT_UPSTREAM_API_KEY"
KEY_HELP = "send it as 'X-Toolsift-Key: KEY' (or as the API key: 'Authorization: Bearer KEY')"
UNAUTHORIZED = ("missing or wrong toolsift key: send it as 'X-Toolsift-Key: KEY' or 'Authorization: Bearer KEY'")


def take_key(received: Mapping[str, str], upstream: dict[str, str]) -> str | None:
    """The toolsift key a proxy request presents (see the module doc). A bearer or ``x-api-key``
    that was the toolsift key is removed from ``upstream`` (the headers about to go upstream) and
    replaced by ``$TOOLSIFT_UPSTREAM_API_KEY`` when that is set."""
    given = received.get(KEY_HEADER)
    if given is not None:
        return given
    replacement = os.environ.get(UPSTREAM_KEY_ENV)
    bearer = received.get("authorization", "")
    if bearer.lower().startswith("bearer "):
        upstream.pop("authorization", None)
        if replacement:
            upstream["authorization"] = f"Bearer {replacement}"
        return bearer[7:].strip()
    if received.get("x-api-key"):  # an Anthropic client's key
        upstream.pop("x-api-key", None)
        if replacement:
            upstream["x-api-key"] = replacement
        return received["x-api-key"]
    return None


def presented_key(headers: Mapping[str, str] | None) -> str | None:
    """The toolsift key an MCP gateway request presents (see the module doc)."""
    if headers is None:
        return None
    given = headers.get(KEY_HEADER)
    if given is not None:
        return given
    bearer = headers.get("authorization", "")
    return bearer[7:].strip() if bearer.lower().startswith("bearer ") else None
