"""examples/README.md runs as written from a clone: every `toolsift` command of its shell block,
on the installed script, from the repository root."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.support.cli import mcp_over_stdio

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Path(sys.executable).parent / "toolsift"
# what each command exits with: check and audit find defective answers in the examples on purpose
EXPECTED_EXIT = {"check": 1, "audit": 1}


def _commands() -> list[str]:
    block = re.search(r"```sh\n(.*?)```", (ROOT / "examples" / "README.md").read_text(encoding="utf-8"), re.S)
    text = block.group(1).replace("\\\n", " ")
    return [ln.strip() for ln in text.splitlines() if ln.strip().startswith("toolsift ")]


def _env(tmp_path: Path) -> dict[str, str]:
    from router.encoders.dense import default_cache_dir

    cache = tmp_path / "cache"
    cache.mkdir()
    if (default_cache_dir() / "onnx").is_dir():  # the ONNX export is not what is tested here
        (cache / "onnx").symlink_to(default_cache_dir() / "onnx", target_is_directory=True)
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TOOLSIFT_DB": str(tmp_path / "examples.db"),
            "TOOLSIFT_CACHE": str(cache), "PATH": f"{SCRIPT.parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def test_every_example_command_runs(tmp_path):
    commands = _commands()
    assert len(commands) >= 8
    env = _env(tmp_path)
    for command in commands:
        args = shlex.split(command.replace("/tmp/", f"{tmp_path}/"), comments=True)[1:]
        if args[:2] == ["serve", "mcp"]:
            _serve_mcp(args, env)
            continue
        proc = subprocess.run([str(SCRIPT), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == EXPECTED_EXIT.get(args[0], 0), (command, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr, command
        if args[0] == "route" and "--queries" in args:
            lines = [json.loads(x) for x in proc.stdout.splitlines()]
            labels = {json.loads(x)["id"]: json.loads(x)["relevant"][0] for x in
                      (ROOT / "examples" / "queries.jsonl").read_text().splitlines()}
            hits = sum(labels[x["id"]] in [t["name"] for t in x["tools"]] for x in lines)
            assert hits >= 7, lines  # the labelled tool in the top 3 for (nearly) every query
    assert (tmp_path / "toolsift-answers.csv").read_text(encoding="utf-8").startswith("question_id,verdict")
    assert "hybrid_wsum" in (tmp_path / "toolsift-bench" / "report.md").read_text(encoding="utf-8")


def _serve_mcp(args: list[str], env: dict[str, str]) -> None:
    """The gateway starts the notes server and lists its tools to a client on stdio."""
    reply, err = mcp_over_stdio([str(SCRIPT), *args, "-v"], {"method": "tools/list"}, cwd=ROOT, env=env)
    assert reply["id"] == 2 and {t["name"] for t in reply["result"]["tools"]} >= {"search_tools"}
    assert "upstream notes ready: 2 tools" in err, err[-2000:]
