"""The one error ``--mode bfcl`` raises: input it cannot check, named precisely."""
from __future__ import annotations

from apidb.errors import ToolsiftError


class BfclInputError(ToolsiftError, ValueError):
    """Input that BFCL's rules cannot check: an unknown category or language, a function
    doc or possible answer of a shape the official checker would crash on, a question id
    with no possible answer. The message names the field; the CLI adds the line."""
