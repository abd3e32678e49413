"""Run the real `toolsift` command: in a subprocess (exactly what a user runs, used for
exit codes and error output) or in-process with typer's runner (fast, for JSON output)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

_SCRIPT = Path(sys.executable).parent / "toolsift"


def toolsift(*args: object, db: Path | None = None, terminal: bool = False, stdin: str | None = None,
             env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """``toolsift ARGS [--db DB]``; falls back to the entry point when the script is absent.
    ``terminal``: print as for a person at a terminal (TOOLSIFT_FORCE_TERMINAL=1), not JSON;
    ``timeout``: seconds (a benchmark section takes minutes)."""
    cmd = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-c", "from router.cli import main; main()"]
    cmd += [str(a) for a in args]
    if db is not None:
        cmd += ["--db", str(db)]
    full = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    full.pop("TOOLSIFT_DB", None)
    full.pop("TOOLSIFT_FORCE_TERMINAL", None)
    if terminal:
        full["TOOLSIFT_FORCE_TERMINAL"] = "1"
    full.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, env=full, timeout=timeout, input=stdin)


def ok_json(*args: object, db: Path | None = None) -> object:
    """Run in-process on the real `toolsift` app and parse its JSON output."""
    from typer.testing import CliRunner

    from router.cli import app

    argv = [str(a) for a in args] + (["--db", str(db)] if db is not None else [])
    result = CliRunner(env={"TOOLSIFT_DB": None}).invoke(app, argv, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def interruptible() -> None:
    """``preexec_fn`` for a child the test will Ctrl-C: SIGINT back to its default. A shell that
    starts a job in the background (``make test &``) leaves SIGINT ignored, every child inherits
    that, and Python then never turns SIGINT into KeyboardInterrupt: the child would run on."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def stop(proc: subprocess.Popen) -> str:
    """Ctrl-C a running `toolsift serve ...` (killed after 30 s) and return its stderr."""
    import signal

    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err


def mcp_over_stdio(argv: list[str], second: dict, *, cwd: Path, env: dict[str, str]) -> tuple[dict, str]:
    """Run ``argv`` (a `toolsift serve mcp ...` on stdio), initialize it as an MCP client, send
    ``second`` (a request with id 2), close stdin; its answer and the gateway's whole stderr."""
    msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"}, {"jsonrpc": "2.0", "id": 2, **second}]
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in msgs))
        proc.stdin.flush()
        replies = [json.loads(proc.stdout.readline()) for _ in range(2)]
    finally:
        proc.stdin.close()
        err = proc.stderr.read()
        proc.wait(timeout=60)
    return replies[1], err
