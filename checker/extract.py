"""Cut the code out of raw model text (Gorilla answers, TorchHub dicts, fences, prose).

Returns candidate snippets in priority order; the checker uses the first one that
holds an API-like call. Pure string work, never raises.
"""
from __future__ import annotations

import re

_GORILLA_API = re.compile(r"<<<\s*api_call\s*>>>\s*:?", re.I)
_GORILLA_CODE = re.compile(r"<<<\s*code\s*>>>\s*:?", re.I)
_NEXT_TAG = re.compile(r"<<<\s*\w+\s*>>>")
# TorchHub answers are Python-dict-like strings: {'domain': ..., 'api_call': "model = ...", ...}
_DICT_API = re.compile(r"""['"]api_call['"]\s*:\s*""")
_DICT_CODE = re.compile(r"""['"]code['"]\s*:\s*""")
_DICT_NEXT_KEY = re.compile(r"""\s*,\s*['"]\w+['"]\s*:|\s*}""")
_FENCE = re.compile(r"```[ \t]*[\w+-]*[ \t]*\n?(.*?)(?:```|$)", re.S)


def unescape(text: str) -> str:
    """Undo the one level of escaping Gorilla responses carry (literal ``\\n``, ``\\"``)."""
    if "\\" not in text:
        return text
    if "\n" not in text:
        text = text.replace("\\n", "\n")
    return text.replace('\\"', '"').replace("\\'", "'")


def _after(text: str, match: re.Match[str]) -> str:
    rest = text[match.end():]
    nxt = _NEXT_TAG.search(rest)
    seg = rest[: nxt.start()] if nxt else rest
    return seg.strip().rstrip(",").strip()


def _dict_value(text: str, match: re.Match[str]) -> str:
    """The string value after ``'key':`` in a dict-like answer, up to the next key."""
    rest = text[match.end():]
    if not rest:
        return ""
    quote = rest[0]
    if quote not in "'\"":
        nxt = _DICT_NEXT_KEY.search(rest)
        return (rest[: nxt.start()] if nxt else rest).strip()
    body = rest[1:]
    # the value ends at its quote followed by the next key (or the closing brace);
    # model output nests the same quote inside, so a bare quote does not end it
    ender = re.compile(re.escape(quote) + r"""(?=\s*,\s*['"]\w+['"]\s*:|\s*}|\s*$)""")
    end = ender.search(body)
    return body[: end.start()] if end else body


def snippets(text: str) -> list[str]:
    """Candidate code snippets, most specific first: api_call, code, fences, whole text."""
    if not isinstance(text, str) or not text.strip():
        return []
    text = unescape(text)
    out: list[str] = []
    m = _GORILLA_API.search(text)
    if m:
        out.append(_after(text, m))
    m = _DICT_API.search(text)
    if m:
        out.append(_dict_value(text, m))
    m = _GORILLA_CODE.search(text)
    if m:
        out.append(_after(text, m))
    m = _DICT_CODE.search(text)
    if m:
        out.append(_dict_value(text, m))
    out.extend(f.group(1) for f in _FENCE.finditer(text) if f.group(1).strip())
    if not out:
        out.append(text)  # free text: only then is the whole answer searched for calls
    return [s for s in dict.fromkeys(out) if s.strip()]
