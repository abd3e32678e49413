"""Tenants: which catalog namespaces a client key may see (issue 17).

The proxy (`toolsift serve openai|anthropic --tenants FILE`) and the MCP gateway
(`toolsift serve mcp --tenants FILE`, where a namespace is an upstream server) read one TOML
file. Keys are never in it, only their sha256 digests (`toolsift tenants hash-key` makes one):

    # tenants.toml
    [tenants.team-a]
    key_sha256 = "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"
    namespaces = ["weather", "calculator"]

    [tenants.ops]
    key_sha256 = ["<new key's digest>", "<old key's digest>"]   # a list: rotate without downtime
    namespaces = ["*"]                                            # every namespace

Bad input is one `RouterError` line naming the file, the tenant and the field. A presented key
is hashed and compared with every stored digest in constant time (`hmac.compare_digest`, and no
early exit), so neither the answer's timing nor its content says which tenant, if any, was close.
"""
from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection

from ..errors import RouterError

ALL = "*"  # in ``namespaces``: every namespace of the catalog
KEY_PREFIX = "tsk_"  # keys `new_key` makes; any string of 16+ characters works as a key
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_FIELDS = {"key_sha256", "namespaces"}
HASH_HINT = "a sha256 hex digest: 64 characters 0-9a-f (make one with `toolsift tenants hash-key`)"


@dataclass(frozen=True)
class Tenant:
    """One tenant: its name (for logs and messages to the operator, never to other tenants) and
    the namespaces it may see (None: every namespace)."""

    name: str
    namespaces: frozenset[str] | None

    def sees(self, namespace: str) -> bool:
        return self.namespaces is None or namespace in self.namespaces

    def visible(self, namespaces: Collection[str]) -> list[str]:
        """The given namespaces this tenant may see, sorted."""
        return sorted(n for n in namespaces if self.sees(n))


def hash_key(key: str) -> str:
    """The digest a tenants file stores for ``key``: sha256 of its UTF-8 bytes, lower-case hex."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_key() -> str:
    """A fresh random key (256 bits from `secrets`), e.g. ``tsk_Jx4...``."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


class Tenants:
    """The tenants of one file, and who a presented key is."""

    def __init__(self, tenants: list[Tenant], digests: list[tuple[bytes, Tenant]], source: str = "tenants") -> None:
        self.tenants, self.source = tenants, source
        self._digests = digests

    def __len__(self) -> int:
        return len(self.tenants)

    def identify(self, key: str | None) -> Tenant | None:
        """The tenant whose key this is, or None (missing or wrong key)."""
        if not key:
            return None
        presented = hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
        found = None
        for stored, tenant in self._digests:  # every digest is compared: no early exit
            if hmac.compare_digest(presented, stored):
                found = tenant
        return found

    def namespaces(self) -> set[str]:
        """Every namespace some tenant names (``*`` left out)."""
        return {n for t in self.tenants for n in (t.namespaces or ())}

    @classmethod
    def load(cls, path: str | Path) -> "Tenants":
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise RouterError(f"{path}: cannot read the tenants file ({exc.strerror or exc})") from None
        except UnicodeDecodeError:
            raise RouterError(f"{path}: the tenants file is not UTF-8 text") from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise RouterError(f"{path}: not a TOML file ({exc})") from None
        return cls.parse(data, str(path))

    @classmethod
    def parse(cls, data: Any, source: str = "tenants") -> "Tenants":
        extra = sorted(set(data) - {"tenants"}) if isinstance(data, dict) else []
        if extra:
            raise RouterError(f"{source}: unknown table or key {extra[0]!r} (a tenants file has only "
                              "[tenants.NAME] tables)")
        table = data.get("tenants") if isinstance(data, dict) else None
        if not isinstance(table, dict) or not table:
            raise RouterError(f"{source}: no tenants: add a [tenants.NAME] table with key_sha256 and namespaces")
        tenants: list[Tenant] = []
        digests: list[tuple[bytes, Tenant]] = []
        owner: dict[str, str] = {}
        for name, entry in table.items():
            tenant, hexes = _parse_tenant(name, entry, source)
            for digest in hexes:
                if digest in owner:
                    raise RouterError(f"{source}: tenant {name!r}: field 'key_sha256': the same key digest is "
                                      f"also tenant {owner[digest]!r}'s (one key, one tenant)")
                owner[digest] = name
                digests.append((bytes.fromhex(digest), tenant))
            tenants.append(tenant)
        return cls(tenants, digests, source)


def _parse_tenant(name: str, entry: Any, source: str) -> tuple[Tenant, list[str]]:
    where = f"{source}: tenant {name!r}"
    if not name.strip():
        raise RouterError(f"{source}: a tenant's name is empty")
    if not isinstance(entry, dict):
        raise RouterError(f"{where}: must be a table with key_sha256 and namespaces")
    unknown = sorted(set(entry) - _FIELDS)
    if unknown:
        raise RouterError(f"{where}: unknown field {unknown[0]!r} (known: key_sha256, namespaces)")
    missing = sorted(_FIELDS - set(entry))
    if missing:
        raise RouterError(f"{where}: field {missing[0]!r} is missing")
    raw_keys = entry["key_sha256"]
    hexes = [raw_keys] if isinstance(raw_keys, str) else raw_keys
    if not isinstance(hexes, list) or not hexes:
        raise RouterError(f"{where}: field 'key_sha256' must be {HASH_HINT}, or a non-empty list of them")
    for i, digest in enumerate(hexes):
        if not isinstance(digest, str) or not _HEX64.match(digest.strip().lower()):
            at = "" if isinstance(raw_keys, str) else f"[{i}]"
            raise RouterError(f"{where}: field 'key_sha256{at}' must be {HASH_HINT}")
    hexes = [d.strip().lower() for d in hexes]
    spaces = entry["namespaces"]
    if not isinstance(spaces, list) or not spaces:
        raise RouterError(f"{where}: field 'namespaces' must be a non-empty list of namespace names "
                          f"(or [\"{ALL}\"] for every namespace)")
    for i, ns in enumerate(spaces):
        if not isinstance(ns, str) or not ns.strip() or ns != ns.strip():
            raise RouterError(f"{where}: field 'namespaces[{i}]' must be a namespace name (a non-empty string "
                              "without surrounding spaces)")
    if ALL in spaces and len(spaces) > 1:
        raise RouterError(f"{where}: field 'namespaces': \"{ALL}\" means every namespace; list it alone")
    return Tenant(name, None if spaces == [ALL] else frozenset(spaces)), hexes
