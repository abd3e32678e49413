"""The proxy's upstream: where a path goes, which headers cross, and how its URL is shown.

- Base URLs with or without ``/v1`` (issue 13): ``http://host:8000`` and ``http://host:8000/v1``
  both mean the API root ``http://host:8000/v1``; a base with another path
  (``https://example.com/openai/v1``, ``.../api``) is used as given. A client path is mapped by
  dropping its own ``/v1`` prefix, so clients configured with or without ``/v1`` both work.
- Header fidelity: the upstream's headers (request ids, rate-limit and ``retry-after``) come back
  to the client, except hop-by-hop ones and those the proxy rewrites (length, encoding).
- Credentials (issues 19, 42): a URL's user-info and secret query values are never printed, logged
  or served (apidb.urls, the one redaction of every printer); `Upstream.display` is the redacted form and `Upstream.redact` scrubs any text (an
  httpx error message can quote the URL).
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping
from urllib.parse import urlsplit, urlunsplit

from apidb.urls import redact_text, redact_url, url_problem

from .errors import RequestError

# RFC 9110 §7.6.1 hop-by-hop headers, plus what the proxy sets itself or must not pass on.
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
                        "transfer-encoding", "upgrade", "proxy-connection"})
# request headers never sent upstream: the proxy's own key and per-request routing marks
_REQUEST_DROP = HOP_BY_HOP | {"host", "content-length", "accept-encoding", "x-toolsift-key", "x-toolsift-keep",
                              "x-toolsift-namespaces"}
# response headers the proxy recomputes (it may re-encode or change the body)
_RESPONSE_DROP = HOP_BY_HOP | {"content-length", "content-encoding", "date", "server"}


class Upstream:
    """An upstream base URL: targets for client paths, and a display form without secrets."""

    def __init__(self, url: str, option: str = "--upstream") -> None:
        problem = url_problem(url.strip())
        try:
            parts = urlsplit(url.strip())
            bad = parts.scheme not in ("http", "https") or not parts.hostname or parts.port == 0
        except ValueError as exc:  # an unclosed IPv6 bracket, a port that is no number
            bad, problem = True, problem or str(exc)
        if bad or problem:
            why = f" ({problem})" if problem and problem != "not a URL (scheme://host...)" else ""
            raise RequestError(f"{option} must be an http(s) URL, got {redact_url(url)!r}{why}")
        path = parts.path.rstrip("/")
        self.base = urlunsplit((parts.scheme, parts.netloc, path or "/v1", "", "")).rstrip("/")
        self._query = parts.query
        self.secrets = [s for s in (parts.password, parts.username, parts.query) if s]
        self.display = redact_url(self.base)

    def target(self, path: str, query: str = "") -> str:
        """The upstream URL for a client's path (``/v1/x`` and ``/x`` both map to ``base/x``)."""
        rest = path[3:] if path == "/v1" or path.startswith("/v1/") else path
        q = "&".join(p for p in (self._query, query) if p)
        return f"{self.base}{rest}" + (f"?{q}" if q else "")

    def redact(self, text: Any) -> str:
        """``text`` with the URL's user, password and query string replaced by ``***``, and every
        URL in it redacted (apidb.urls)."""
        out = str(text)
        for secret in sorted(self.secrets, key=len, reverse=True):
            out = out.replace(secret, "***")
        return redact_text(out)


def request_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """A client's headers as sent upstream: everything but hop-by-hop and the proxy's own."""
    return {k: v for k, v in headers if k.lower() not in _REQUEST_DROP}


def response_headers(headers: Mapping[str, str] | Any) -> dict[str, str]:
    """An upstream answer's headers as returned to the client (request ids, rate limits,
    ``retry-after``, content type ...), minus hop-by-hop and those the proxy recomputes."""
    out: dict[str, str] = {}
    for k, v in headers.multi_items() if hasattr(headers, "multi_items") else headers.items():
        if k.lower() not in _RESPONSE_DROP and k.lower() not in out:
            out[k.lower()] = v
    return out
