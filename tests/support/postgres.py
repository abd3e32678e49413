"""A throwaway PostgreSQL cluster for the tests: initdb in a temporary folder, a free port on
127.0.0.1, stopped at the end of the run.

The server refuses to run as root. When the tests run as root (CI here does), the cluster belongs
to the unprivileged user ``nobody`` (its folder is chowned to it) and every server command runs
through ``runuser``. One cluster serves the whole session (``pg_cluster``); each test gets a fresh
database (``pg_url``). Tests that stop the server (the connection-loss checks) start a cluster of
their own with `Cluster`. Without the binaries the tests skip and say where they looked.
"""
from __future__ import annotations

import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

PG_BIN = Path(os.environ.get("TOOLSIFT_PG_BIN", "/usr/lib/postgresql/15/bin"))
SUPERUSER = "toolsift"
RUN_AS = "nobody"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def binaries_missing() -> str | None:
    """Why no cluster can start here, or None."""
    for name in ("initdb", "pg_ctl", "postgres"):
        if not (PG_BIN / name).exists():
            return (f"PostgreSQL server binaries not found ({PG_BIN / name} is absent; "
                    "apt-get install postgresql-15, or set TOOLSIFT_PG_BIN)")
    return None


class Cluster:
    """One PostgreSQL cluster in its own temporary folder (see the module doc)."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="toolsift-pg-"))
        self.data, self.log = self.root / "data", self.root / "server.log"
        self.port = free_port()
        self._names = itertools.count()
        self._as_other = os.geteuid() == 0
        if self._as_other:
            user = pwd.getpwnam(RUN_AS)
            os.chown(self.root, user.pw_uid, user.pw_gid)
        self._run(PG_BIN / "initdb", "-D", self.data, "-U", SUPERUSER, "-A", "trust", "-E", "UTF8",
                  "--locale=C.UTF-8", "--no-sync")
        self.start()

    def _run(self, *cmd, check: bool = True) -> subprocess.CompletedProcess:
        argv = [str(c) for c in cmd]
        if self._as_other:
            argv = ["runuser", "-u", RUN_AS, "--", *argv]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=self.root)
        if check and proc.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()[-800:]}")
        return proc

    def start(self) -> None:
        """Start (or restart, on the same port) the server; returns once it accepts connections."""
        opts = (f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        self._run(PG_BIN / "pg_ctl", "-D", self.data, "-l", self.log, "-o", opts, "-w", "-t", "60", "start")

    def stop(self) -> None:
        self._run(PG_BIN / "pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop", check=False)

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{dbname}"

    def create_database(self, prefix: str = "t") -> str:
        """A fresh, empty database; its URL."""
        import psycopg

        name = f"{prefix}_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def destroy(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def wait_until(condition, timeout: float = 30.0, every: float = 0.1, what: str = "condition"):
    """Poll ``condition()`` until it returns something true; its value, or AssertionError."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(every)


@pytest.fixture(scope="session")
def pg_cluster():
    """One throwaway cluster for the whole run (skips, saying why, without the binaries)."""
    why = binaries_missing()
    if why:
        pytest.skip(why)
    cluster = Cluster()
    try:
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture
def pg_url(pg_cluster) -> str:
    """The URL of a fresh database on the session's cluster."""
    return pg_cluster.create_database()


if __name__ == "__main__":  # `python -m tests.support.postgres`: a cluster for a benchmark, until terminated
    import signal
    import sys

    why = binaries_missing()
    if why:
        print(why, file=sys.stderr)
        raise SystemExit(2)
    cluster = Cluster()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        print(cluster.create_database("bench"), flush=True)
        signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        cluster.destroy()
