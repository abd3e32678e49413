"""The one normalized record every catalog format is turned into."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from .names import openai_name

EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
# Metadata that says where a record sat in its source, not what the API is: kept and
# stored, but left out of the content hash so deleting one line of a source does not
# make every later record look changed (and re-embedded).
POSITIONAL_METADATA = ("source_index",)


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: the form hashes are taken over."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def make_id(namespace: str, local: str) -> str:
    """Stable record id: ``namespace/local``. Ids never depend on load order."""
    return f"{namespace}/{local}"


@dataclass(frozen=True)
class ApiRecord:
    """One callable API, whatever catalog it came from.

    ``name`` is what a model would emit (a function/tool name, or for code-style APIs
    the API's own name); ``call`` is the canonical call expression of code-style
    APIs (Gorilla), which the checker matches generated code against.
    """

    id: str
    namespace: str
    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: dict(EMPTY_SCHEMA))
    call: str | None = None
    source_format: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def content_hash(self) -> str:
        """sha256 over everything that describes the API (not over the id). Computed once per
        record (records are never changed in place: a changed API is a new record); an index
        build asked for it ~6 times per record, 1.8 s of a 20k-tool build."""
        meta = {k: v for k, v in self.metadata.items() if k not in POSITIONAL_METADATA}
        payload = canonical_json([self.namespace, self.name, self.description, self.parameters,
                                  self.call, self.source_format, meta])
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    @property
    def is_code(self) -> bool:
        return self.call is not None

    def with_namespace(self, namespace: str) -> "ApiRecord":
        local = self.id.split("/", 1)[1] if "/" in self.id else self.id
        return replace(self, namespace=namespace, id=make_id(namespace, local))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id, "namespace": self.namespace, "name": self.name,
            "description": self.description, "parameters": self.parameters,
            "source_format": self.source_format, "metadata": self.metadata,
            "content_hash": self.content_hash,
        }
        if self.call is not None:
            out["call"] = self.call
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ApiRecord":
        return cls(id=data["id"], namespace=data["namespace"], name=data["name"],
                   description=data.get("description", ""),
                   parameters=data.get("parameters") or dict(EMPTY_SCHEMA),
                   call=data.get("call"), source_format=data.get("source_format", ""),
                   metadata=data.get("metadata") or {})

    def openai_name(self) -> str:
        """A name OpenAI accepts (``^[a-zA-Z0-9_-]{1,64}$``)."""
        return openai_name(self.name)

    def to_openai_tool(self, name: str | None = None) -> dict[str, Any]:
        """This record as a Chat Completions ``tools`` entry."""
        return {"type": "function", "function": {
            "name": name or self.openai_name(),
            "description": self.description,
            "parameters": self.parameters or dict(EMPTY_SCHEMA),
        }}
