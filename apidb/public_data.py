"""Where the public benchmark data lives: ``$TOOLSIFT_SHARED_DATA``, else ``../shared/data`` beside
the repository (the project's machines put it there). The benchmarks, the test suite and the
checker's BFCL mode (which looks up a question's function docs by id) all find it here."""
from __future__ import annotations

import os
from pathlib import Path


def data_root() -> Path:
    """``$TOOLSIFT_SHARED_DATA`` or ``<repo>/../shared/data`` (read at each call: tests change it)."""
    env = os.environ.get("TOOLSIFT_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared" / "data"
