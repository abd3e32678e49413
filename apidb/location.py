"""Which catalog a command means: a --db value or ``$TOOLSIFT_DB`` (a file path, or a
``postgresql://`` URL for a catalog on a server), else the default file; and whether it exists.
Split from catalog.py: none of it opens a catalog.
"""
from __future__ import annotations

import os
from pathlib import Path

from ._postgres import is_server_url


def catalog_location(value: str | os.PathLike[str]) -> str | Path:
    """A --db value as the catalog it names: a PostgreSQL URL stays a string, a file a Path."""
    return value if is_server_url(value) else Path(value)


def default_db_path() -> Path | str:
    """``$TOOLSIFT_DB`` (a file or a ``postgresql://`` URL), else ``$XDG_DATA_HOME/toolsift/catalog.db``
    (``~/.local/share``)."""
    env = os.environ.get("TOOLSIFT_DB")
    if env:
        return catalog_location(env)
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "toolsift" / "catalog.db"


def catalog_exists(location: str | os.PathLike[str]) -> bool:
    """Whether a file catalog exists (a server URL is always taken to exist: connecting says)."""
    return is_server_url(location) or Path(location).exists()
