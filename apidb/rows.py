"""Records as stored rows and back, the same for every store (apidb.catalog)."""
from __future__ import annotations

import json
from pathlib import Path

from .errors import CatalogError
from .record import ApiRecord
from .safe_io import lone_surrogate

COLUMNS = ("id", "namespace", "name", "description", "parameters", "call", "source_format",
           "metadata", "content_hash")


def record_to_row(rec: ApiRecord, server: bool = False) -> tuple:
    """The row of a record; text no store can keep is a CatalogError naming the record and field.
    ``server``: the row is for PostgreSQL, whose text cannot hold a NUL character."""
    row = (rec.id, rec.namespace, rec.name, rec.description,
           json.dumps(rec.parameters, ensure_ascii=False), rec.call, rec.source_format,
           json.dumps(rec.metadata, ensure_ascii=False, default=str), rec.content_hash)
    # both store UTF-8: a lone surrogate would fail mid-transaction with a UnicodeEncodeError
    for column, value in zip(COLUMNS, row):
        if not isinstance(value, str):
            continue
        if (i := lone_surrogate(value)) is not None:
            raise CatalogError(f"record {rec.id!r}: field {column!r} is not valid Unicode "
                               f"(a lone surrogate at character {i})")
        if server and "\x00" in value:
            raise CatalogError(f"record {rec.id!r}: field {column!r} holds a NUL character at "
                               f"{value.index(chr(0))}, which PostgreSQL text cannot store")
    return row


def row_to_record(where: Path | str, row: tuple) -> ApiRecord:
    """A stored row as a record; a damaged row is a CatalogError naming it and its field."""
    rid, ns, name, desc, params, call, fmt, meta, _hash = row
    for field, value, kinds in (("id", rid, str), ("namespace", ns, str), ("name", name, str),
                                ("description", desc, str), ("call", call, (str, type(None))),
                                ("source_format", fmt, str)):
        if not isinstance(value, kinds):
            raise _damaged(where, rid, field, f"holds {type(value).__name__}, not text")
    decoded = []
    for field, text in (("parameters", params), ("metadata", meta)):
        try:
            value = _json(text) if isinstance(text, (str, bytes)) else None
        except (ValueError, RecursionError) as exc:
            raise _damaged(where, rid, field, f"is not valid JSON ({str(exc).splitlines()[0][:80]})") from None
        if not isinstance(value, dict):
            raise _damaged(where, rid, field, "is not a JSON object")
        decoded.append(value)
    return ApiRecord(id=rid, namespace=ns, name=name, description=desc, parameters=decoded[0],
                     call=call, source_format=fmt, metadata=decoded[1])


def _damaged(where: Path | str, rid: object, field: str, what: str) -> CatalogError:
    return CatalogError(f"{where}: record {rid!r}: field {field!r} {what}; the catalog is damaged "
                        "(remove that namespace and add its source again)")


def _json(text: str):
    """A stored JSON column: msgspec (2.5x faster than json.loads on the 20k-record catalogs a
    fresh `toolsift route` reads; integers of any size stay exact), json for what it refuses
    (NaN / Infinity, which json.dumps writes)."""
    try:
        return _DECODE(text)
    except Exception:
        return json.loads(text)


def _decoder():
    try:
        import msgspec
    except ImportError:  # pragma: no cover - msgspec is a dependency; json still reads everything
        return json.loads
    return msgspec.json.Decoder().decode


_DECODE = _decoder()
