"""`toolsift demo` runs the main job end to end on the bundled catalog (what `make demo` shows)."""
from __future__ import annotations

import re

from typer.testing import CliRunner

from router.cli import app


def test_demo_builds_routes_and_checks(tmp_path):
    result = CliRunner().invoke(app, ["demo", "--db", str(tmp_path / "demo.db")], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = result.output
    assert "added 1069" in text  # 94 TorchHub + 80 TF Hub (deduplicated) + 895 Hugging Face records
    assert ": 0 embedded, 1069 from cache" in text  # the shipped vectors: `make demo` embeds nothing
    # every example question gets a ranked table whose first row has a score
    assert text.count("top tools for:") == 3
    assert re.search(r"^ +1\.? +\S+/\S+ +(score )?[01]\.\d{3} ", text, re.M), text
    # the summarization question is answered by a summarization model
    block = text.split("summarizes long English news")[1].split("top tools for")[0]
    assert "summar" in re.search(r"^ +1\.? +(\S+)", block, re.M).group(1)
    # one example output per verdict, each labelled as expected
    for verdict in ("correct", "wrong_api", "hallucinated", "unparsable"):
        assert re.search(rf"^{verdict} +<<<api_call>>>|^{verdict} +I am", text, re.M), verdict
    # it ends with what to try next (issue 40: the demo ended with no next steps)
    tail = text.rsplit("Next", 1)[1]
    assert "toolsift catalog add" in tail and "tools.json" in tail and "toolsift route" in tail


def _next_steps(text: str) -> list[str]:
    """The command lines after the demo's "Next" rule (comments dropped)."""
    lines = text.rsplit("Next", 1)[1].splitlines()[1:]
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def test_every_next_step_the_installed_demo_prints_runs(tmp_path):
    """Issue 40: the next steps were checked in-process, and only for their wording. Here the installed
    `toolsift demo` runs in an empty folder (its own cache, COLUMNS=80) and each command it prints runs
    there exactly as printed, each part of an `a && b` line in turn: each exits 0. The server it
    suggests is started on a free port, answers /healthz, and stops on Ctrl-C (130, as documented)."""
    import os
    import shlex
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    import httpx

    from tests.router.middleware.test_proxy_hardening import free_port
    from tests.support.cli import interruptible

    script = Path(sys.executable).parent / "toolsift"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "80", "TOOLSIFT_CACHE": str(tmp_path / "cache")}
    env.pop("TOOLSIFT_DB", None)
    work = tmp_path / "work"
    work.mkdir()

    def run(argv: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run([str(script), *argv], cwd=work, env=env, capture_output=True, text=True, timeout=600)

    demo = run(["demo", "--db", ".toolsift/demo.db"])
    assert demo.returncode == 0, demo.stderr
    steps = _next_steps(demo.stdout)
    assert len(steps) >= 3 and any(" serve " in f" {s} " for s in steps), steps
    ran = []
    for line in steps:
        for part in line.split("&&"):
            argv = shlex.split(part, comments=True)
            assert argv[0] == "toolsift", line  # a printed step is a toolsift command, nothing else
            if argv[1] == "serve":
                port = free_port()
                proc = subprocess.Popen([str(script), *argv[1:], "--port", str(port)], cwd=work, env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        preexec_fn=interruptible)
                try:
                    end, status = time.monotonic() + 180, None
                    while time.monotonic() < end and proc.poll() is None:
                        try:
                            status = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).json()["status"]
                        except httpx.TransportError:
                            status = None
                        if status == "ok":
                            break
                        time.sleep(0.2)
                    assert status == "ok", proc.stderr.read() if proc.poll() is not None else status
                finally:
                    proc.send_signal(signal.SIGINT)
                    _, err = proc.communicate(timeout=60)
                # a server runs until stopped: Ctrl-C is "interrupted", 130 (docs/cli.md), and no traceback
                assert proc.returncode == 130 and "Traceback" not in err, (part, err)
            else:
                done = run(argv[1:])
                assert done.returncode == 0, (part, done.stdout[-2000:], done.stderr[-2000:])
            ran.append(argv[1])
    assert {"route", "catalog", "index", "check", "serve", "--help"} <= set(ran), ran
    assert not list(work.glob("*.db")), "the demo's next steps wrote a catalog into the current folder"
