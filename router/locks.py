"""A cross-process lock on a cache file or folder (POSIX advisory lock), and the creation of a
cache folder that says, in one line, why it cannot be made."""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Serialize work on one cache file or folder across processes."""
    import fcntl

    with open(path, "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def cache_folder(path: Path) -> Path:
    """``path`` created (with its parents) if needed. A ``$TOOLSIFT_CACHE`` under a file, or on a
    read-only disk, is one RouterError naming the folder, not a traceback."""
    from .errors import RouterError

    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RouterError(f"{path}: cannot create the cache folder ({exc.strerror or exc}); "
                          "set $TOOLSIFT_CACHE to a writable folder") from None
    return path
