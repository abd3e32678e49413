"""Error hierarchy shared by every toolsift package.

`ToolsiftError` is the one base class the CLI catches to print a one-line message
instead of a traceback; each concern has its own subclass.
"""
from __future__ import annotations


class ToolsiftError(Exception):
    """Base class of every error toolsift raises on purpose."""


class CatalogError(ToolsiftError):
    """The catalog file is missing, corrupt, or an operation on it failed."""


class LoadError(ToolsiftError):
    """A source file could not be turned into API records.

    The message always names the file, and where known the record (index or name)
    and the field, so a user can fix the input without reading a traceback.
    """

    def __init__(self, file: str, message: str, *, record: str | int | None = None,
                 field: str | None = None) -> None:
        self.file = str(file)
        self.record = record
        self.field = field
        self.reason = message
        super().__init__(self.one_line())

    def one_line(self) -> str:
        where = [self.file]
        if self.record is not None:
            where.append(f"record {self.record}" if isinstance(self.record, int) else f"record {self.record!r}")
        if self.field:
            where.append(f"field {self.field!r}")
        # one line, whatever a parser's message holds (the CLI prints one line per error)
        return " ".join(f"{': '.join(where)}: {self.reason}".splitlines())
