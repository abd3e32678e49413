"""URLs as every printer shows them: never a credential (issue 42).

One redaction for every URL toolsift prints, logs or serves: a PostgreSQL ``--db`` (in each
form libpq accepts: ``postgresql://`` and ``postgres://``, a password in the user-info or as
``?password=``, several hosts, IPv6 brackets, percent-encoding), an ``--upstream`` base URL, a
URL an error message quotes.

- The user-info (``user:password@``) becomes ``***@``: a token is often the user name itself. A
  PostgreSQL URL keeps its role name (``user:***@``): a role is no secret, and it is what one debugs.
- A query parameter whose name says it is a secret (``password``, ``sslpassword``, ``api-key``,
  ``token``, ``sig`` ...) keeps its name and loses its value (``password=***``); the others
  (``sslmode``, ``api-version``) stay readable, since they are what one debugs.
- A URL that does not parse is still redacted: this is text surgery, it never raises.

`redact_text` applies the same to every URL inside free text (an exception message, a log line),
and to libpq's keyword form (``password=...``).
"""
from __future__ import annotations

import re
from urllib.parse import unquote

__all__ = ["redact_text", "redact_url", "url_problem"]

SECRET_NAME = re.compile(r"pass|secret|token|key|auth|sig|cred|session|code|jwt", re.IGNORECASE)
_DATABASE_SCHEMES = ("postgresql:", "postgres:")
_URL_START = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*:)(//)?")
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`]+")
# libpq's keyword form (host=h password=p): a value quoted, or up to a blank (not one already ***)
_KEYWORD_SECRET = re.compile(r"\b([A-Za-z_]*pass(?:word|wd)?)\s*=\s*('(?:[^'\\]|\\.)*'|(?!\*\*\*)[^\s&]+)",
                             re.IGNORECASE)


def redact_url(url: str) -> str:
    """``url`` without its user-info and secret query values (see the module doc)."""
    text = str(url)
    start = _URL_START.match(text)
    if start is None or start.group(2) is None:  # not scheme://...: a path, a name
        return text
    head, rest = text[: start.end()], text[start.end():]
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    netloc, tail = rest[:cut], rest[cut:]
    if "@" in netloc:
        user, host = netloc.rsplit("@", 1)
        if head.lower().startswith(_DATABASE_SCHEMES) and user.split(":", 1)[0]:
            netloc = f"{user.split(':', 1)[0]}{':***' if ':' in user else ''}@{host}"  # a role name is no secret
        else:
            netloc = f"***@{host}"
    fragment = ""
    if "#" in tail:
        tail, fragment = tail.split("#", 1)
        fragment = "#***"
    if "?" in tail:
        path, query = tail.split("?", 1)
        tail = path + "?" + "&".join(_redact_param(p) for p in query.split("&"))
    return head + netloc + tail + fragment


def _redact_param(param: str) -> str:
    name, eq, _ = param.partition("=")
    return f"{name}=***" if eq and SECRET_NAME.search(unquote(name)) else param


def redact_text(text: object) -> str:
    """``text`` with every URL in it redacted (`redact_url`), and libpq ``password=...`` keywords."""
    out = _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), str(text))
    return _KEYWORD_SECRET.sub(lambda m: f"{m.group(1)}=***", out)


def url_problem(url: str) -> str | None:
    """What is wrong with a server URL's host list (one line), or None: a port that is not a
    number from 1 to 65535, an unclosed ``[`` of an IPv6 address, no host at all."""
    start = _URL_START.match(url)
    if start is None or start.group(2) is None:
        return "not a URL (scheme://host...)"
    rest = url[start.end():]
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    hosts = rest[:cut].rsplit("@", 1)[-1]
    for host in hosts.split(",") if hosts else []:
        if host.startswith("["):
            if "]" not in host:
                return f"host {redact_url(host)!r}: an IPv6 address needs its closing ']'"
            port = host.split("]", 1)[1]
            port = port[1:] if port.startswith(":") else (None if not port else port)
        else:
            port = host.rsplit(":", 1)[1] if ":" in host else None
        if port is not None and port != "" and not (port.isdigit() and 1 <= int(port) <= 65535):
            return f"port {port!r} is not a number from 1 to 65535"
    return None
