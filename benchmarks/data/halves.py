"""The fixed two-way split of every dataset's queries that cross-fitting and the router grid use."""
from __future__ import annotations

import hashlib


def half_of(qid: str, dataset: str) -> str:
    """"dev" or "test": sha1 of dataset and query id, so every run splits the same way."""
    return "dev" if int(hashlib.sha1(f"{dataset}:{qid}".encode()).hexdigest(), 16) % 2 == 0 else "test"
