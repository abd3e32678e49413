"""What one record's keys may hold in a catalog: the same limits in both stores (SQLite and
PostgreSQL), so a record one store accepts is never refused by the other. `Catalog.sync` checks
every record against them before it takes the write lock; `toolsift catalog add` checks them
while loading, to name the source file in the error. Split from catalog.py.
"""
from __future__ import annotations

from .errors import CatalogError
from .record import ApiRecord

# What one record's keys may hold, the same in both stores (issue 42): PostgreSQL's btree refuses an
# index entry over ~2.7 KB (the id is the primary key, the namespace indexed), SQLite has no limit,
# so a long name was accepted by one and refused by the other. In UTF-8 bytes, with room to spare.
MAX_ID_BYTES = 1024
MAX_NAMESPACE_BYTES = 256


def check_limits(rec: ApiRecord) -> None:
    """CatalogError naming the record and field when its keys pass the store limits."""
    for field, value, limit in (("namespace", rec.namespace, MAX_NAMESPACE_BYTES), ("id", rec.id, MAX_ID_BYTES)):
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > limit:
            what = "namespace" if field == "namespace" else "name (the id is namespace/name)"
            raise CatalogError(f"record {value[:60]!r}...: field {field!r} is {size:,} bytes; a record's {what} "
                               f"may be at most {limit:,} bytes (UTF-8) in either store")
