"""Run the real `toolsift` with some packages out of reach, as in an install without them.

A ``sitecustomize.py`` on PYTHONPATH (imported by Python at start-up, before toolsift) puts a
finder first on ``sys.meta_path``. ``watch``: each attempt to import (or look up) a watched
package is written to a log file and then refused: a test reads the log, so a guarded
``try: import torch`` is caught too. ``absent``: the package looks uninstalled
(``sys.modules[name] = None``: ``import`` raises ImportError, ``importlib.util.find_spec``
returns None), as after `pip install toolsift` without the extra.
"""
from __future__ import annotations

import os
from pathlib import Path

TRAINING = ("torch", "transformers", "sentence_transformers")

_SITE = '''\
import sys

_WATCHED = {watched!r}
_LOG = {log!r}
for _name in {absent!r}:
    sys.modules[_name] = None


class _Refuse:
    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in _WATCHED:
            import traceback
            with open(_LOG, "a", encoding="utf-8") as fh:
                fh.write(fullname + "\\n" + "".join(traceback.format_stack(limit=12)) + "\\n")
            raise ImportError(f"test: importing {{fullname}} is refused")
        return None


sys.meta_path.insert(0, _Refuse())
'''


def blocking_env(tmp: Path, *, watch: tuple[str, ...] = (), absent: tuple[str, ...] = ()) -> tuple[dict[str, str], Path]:
    """Environment variables for a subprocess with the hook installed, and its log file."""
    site = tmp / "blocked-imports"
    site.mkdir(parents=True, exist_ok=True)
    log = site / "attempts.log"
    log.touch()
    (site / "sitecustomize.py").write_text(_SITE.format(watched=tuple(watch), log=str(log), absent=tuple(absent)),
                                           encoding="utf-8")
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path}, log
