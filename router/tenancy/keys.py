"""Who a request is: the one place where a client's key and its identity are read (issues 17, 42).

Every way in (the proxy, the MCP gateway) reads the key by the same rules (`presented_key`):
``X-Toolsift-Key: KEY`` first; without it the bearer token (``Authorization: Bearer KEY``), then
an Anthropic client's ``x-api-key``.

At the proxy (`take_key`), every header that carried the key itself is removed from what goes
upstream — the bearer *and* ``x-api-key`` when a client sends the key in both — and
``$TOOLSIFT_UPSTREAM_API_KEY`` authorizes the upstream call in its place (for clients that can
set only an API key and a base URL). A client's own upstream key (a different value) passes
through. The gateway forwards no client header to its upstream servers.

`client_id` is the key every piece of per-client state is kept under (the Responses memory,
views, logs): the tenant's name with a tenants file; without one, a keyed digest of the
credentials the client sends upstream (two clients of an open proxy are two parties), never the
credentials themselves. Nothing here keeps a key: a presented key is hashed, compared with the
tenants file's digests (router.tenancy.tenants) and dropped.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from typing import Any, Mapping

KEY_HEADER = "x-toolsift-key"
NAMESPACES_HEADER = "x-toolsift-namespaces"
UPSTREAM_KEY_ENV = "TOOLSIFT_UPSTREAM_API_KEY"
KEY_HELP = "send it as 'X-Toolsift-Key: KEY' (or as the API key: 'Authorization: Bearer KEY' or 'x-api-key: KEY')"
UNAUTHORIZED = ("missing or wrong toolsift key: send it as 'X-Toolsift-Key: KEY' or 'Authorization: Bearer KEY'")

# the per-process secret of `client_id`: digests of credentials mean nothing outside this process
_CLIENT_SECRET = secrets.token_bytes(32)


def _bearer(headers: Mapping[str, str]) -> str | None:
    value = headers.get("authorization") or ""
    return value[7:].strip() if value[:7].lower() == "bearer " else None


def presented_key(headers: Mapping[str, str] | None) -> str | None:
    """The toolsift key a request presents: ``X-Toolsift-Key``, else the bearer token, else
    ``x-api-key`` (the same rules at the proxy and at the gateway)."""
    if headers is None:
        return None
    given = headers.get(KEY_HEADER)
    if given is not None:
        return given
    bearer = _bearer(headers)
    if bearer is not None:
        return bearer
    return headers.get("x-api-key") or None


def take_key(received: Mapping[str, str], upstream: dict[str, str]) -> str | None:
    """The toolsift key a proxy request presents (`presented_key`). Every header of ``upstream``
    (the headers about to go upstream) that carries that key is removed, and replaced by
    ``$TOOLSIFT_UPSTREAM_API_KEY`` when that is set."""
    key = presented_key(received)
    if not key:
        return key
    replacement = os.environ.get(UPSTREAM_KEY_ENV)
    if _bearer(received) == key:
        upstream.pop("authorization", None)
        if replacement:
            upstream["authorization"] = f"Bearer {replacement}"
    if received.get("x-api-key") == key:
        upstream.pop("x-api-key", None)
        if replacement:
            upstream["x-api-key"] = replacement
    return key


def client_id(tenant: Any, upstream: Mapping[str, str] | None = None) -> str:
    """The identity per-client state is kept under: ``tenant:NAME`` for a tenant; otherwise a
    keyed digest of the credentials going upstream (``authorization``, ``x-api-key``), or ``""``
    for a client that sends none."""
    if tenant is not None:
        return f"tenant:{tenant.name}"
    if not upstream:
        return ""
    creds = "\n".join(f"{h}={upstream.get(h, '')}" for h in ("authorization", "x-api-key"))
    if not creds.replace("authorization=", "").replace("x-api-key=", "").strip():
        return ""
    digest = hmac.new(_CLIENT_SECRET, creds.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
    return f"client:{digest[:32]}"
