"""The root of toolsift's error tree, and the catalog's own errors.

Every error toolsift raises on purpose is a `ToolsiftError`; the command line prints one as a
single ``error: ...`` line and exits 2 (never a traceback). Each package adds one subclass,
declared in that package's own ``errors`` module::

    ToolsiftError                      apidb.errors
    ├── CatalogError                   apidb.errors           the catalog file or an operation on it
    │   └── LoadError                  apidb.errors           a source file cannot become records
    ├── CheckerError                   checker.errors         bad checker input or mode
    │   └── AuditError                 checker.errors         a response or gold file cannot be read
    ├── RouterError                    router.errors          bad query or control, unusable index
    ├── MiddlewareError                router.middleware.errors
    │   ├── RequestError               a client's request is malformed (proxy: 400)
    │   │   └── WireError              the body is not a well-formed Chat Completions request
    │   └── HallucinatedCallError      the model's tool calls fail the checker (mode "raise")
    ├── GatewayError                   router.gateway.errors  bad MCP gateway config or call
    ├── AgentError                     router.agent.errors    bad loop settings (also a ValueError)
    ├── FrameworkError                 router.frameworks.errors  a tool that cannot be a record; a missing extra
    │   └── MissingExtraError          a framework package is not installed (also an ImportError)
    ├── CliError                       router.cli.errors      a command-line value that cannot work
    └── BenchmarkError                 benchmarks.errors      a benchmark cannot run
        ├── DatasetError               a dataset is unknown, missing or malformed
        └── MethodError                a retrieval method is unknown or unsupported

The root lives here because apidb is the bottom layer: every other package may import it.
"""
from __future__ import annotations


class ToolsiftError(Exception):
    """Base class of every error toolsift raises on purpose."""


class CatalogError(ToolsiftError):
    """The catalog file is missing, corrupt, or an operation on it failed."""


class LoadError(CatalogError):
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
