"""A file the request names as its result is a step of its own: writing that file.

"Generate a research summary for NCT04280705 and save it as Markdown to /root/markdown/NCT04280705.md"
needs a tool that writes files, yet none of its words says so in a catalog's words: BM25 and the
encoder read the path's folder and extension ("markdown", "md") and rank Markdown converters and
note-taking tools, while the file-writing tool sits far below the top ten. An agent's request names
an output file often (a report, a script, a table to save), and the step it implies is always the
same: write that file.

So a path with a file extension that a producing verb ("save", "write", "generate", "create", ...)
sends its result to ("to", "in", "into", "at", "as") in the same sentence is one more part of the
request (router.ranking.part_tools places each part's best tool after the first places): its span is
the clause from the verb to the path (what the explanation shows), and it is ranked by ``WORDS``,
what the step does: their BM25, and their vector (encoded once per router) for the part floor
(RouterConfig.part_floor), which so asks whether a tool resembles writing a file, not the path's
folders. It takes no part in coverage or abstention (router.ranking.shaping), so a catalog with no
tool that writes files gets nothing from it. A path the request reads from ("Read the data under
/root/excel/people.xlsx") has no producing verb before it and adds nothing. On or off is
RouterConfig.output_file, chosen by `toolsift bench routing --only companions` (docs/routing.md).
"""
from __future__ import annotations

import bisect
import re

__all__ = ["WORDS", "output_spans", "with_outputs"]

# what the step does, in the words tools that do it are named and described with
WORDS = "write content to a file"

# a path to a file: folders then a name with an extension ("/root/code/cnn_example.py",
# "~/out/report.md", "out/table.csv"); a bare "report.md" is too often a title or an input's name
_PATH = r"(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]*\w\.[A-Za-z][A-Za-z0-9]{0,4}\b"
_VERB = re.compile(
    r"\b(?:save[sd]?|saving|write|writes|writing|written|wrote|store[sd]?|storing|export(?:s|ed|ing)?|output|"
    r"generate[sd]?|generating|create[sd]?|creating|draft(?:s|ed|ing)?|make|makes|made|making|produce[sd]?|"
    r"producing|put|dump(?:s|ed)?|build|built)\b", re.IGNORECASE)
# a preposition of destination right before the path
_DESTINATION = re.compile(rf"\b(?:to|in|into|at|as|under)\s+[`'\"]?(?P<path>{_PATH})", re.IGNORECASE)
# a sentence ends at ".", "?", "!", ";" or a new line followed by space ("Next.js" goes on)
_SENTENCE_END = re.compile(r"[.?!;](?=\s)|\n")


def output_spans(query: str) -> list[tuple[int, int]]:
    """(start, end) of each clause that sends the request's result to a file: from the last producing
    verb before the path, in the same sentence, to the end of the path; [] when the request names
    no output file."""
    spans: list[tuple[int, int]] = []
    ends: list[int] | None = None
    for m in _DESTINATION.finditer(query):
        if ends is None:  # most requests name no path: the sentence ends only for those that do
            ends = [e.end() for e in _SENTENCE_END.finditer(query)]
        i = bisect.bisect_right(ends, m.start())
        verbs = list(_VERB.finditer(query, ends[i - 1] if i else 0, m.start()))
        if verbs:
            spans.append((verbs[-1].start(), m.end("path")))
    return spans


def with_outputs(query: str, clauses: list[tuple[int, int]], min_words: int = 3
                 ) -> tuple[list[tuple[int, int]], list[str | None] | None]:
    """The request's parts with its output files' parts added, and the words each part is ranked by
    (None: its own text; ``WORDS`` for an output file's), or None for the words when the request names
    no output file. A request cut into no parts becomes two: what comes before its first output clause
    (when that has ``min_words`` words, else the whole request), and the output clause."""
    outputs = output_spans(query)
    if not outputs:
        return clauses, None
    if not clauses:
        lead = query[:outputs[0][0]].rstrip(" ,;:\t\n")
        lead = re.sub(r"\s+(?:and then|and|then)$", "", lead, flags=re.IGNORECASE)
        # the rest of the request is the other part; when the output clause opens it ("Create a
        # Next.js middleware ... in /root/code/middleware.ts"), the whole request is
        start = len(query[:outputs[0][0]]) - len(query[:outputs[0][0]].lstrip())
        clauses = [(start, len(lead))] if len(lead.split()) >= min_words else [(0, len(query.rstrip()))]
    spans = list(clauses) + [o for o in outputs if o not in clauses]
    return spans, [None] * len(clauses) + [WORDS] * (len(spans) - len(clauses))
