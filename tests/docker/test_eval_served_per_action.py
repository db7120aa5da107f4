"""`swe-srl eval --policy openai --shell per-action` as a user runs it, against a scripted local chat server
(tests/chat_stub): the model `cd`s into the package, then names a file relative to /testbed, which reads only because
each action ran as a fresh bash from /testbed; the prompt the server received says so, and the run's trajectory and
report record the mode, and the CLI prints it. The same script under `--shell persistent` (the default) finds no such file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from chat_stub import ChatStub, serving

from swe_srl.core.actions import format_output
from swe_srl.core.prompts import PER_ACTION_NOTE
from swe_srl.core.shells import PER_ACTION, PERSISTENT

pytestmark = pytest.mark.docker
INSTANCE = "tabulate__tabulate-m001"  # bundled:test, the eval's default dataset
SCRIPT = [
    format_output("Look inside the package.", "cd tabulate && ls"),
    format_output("Read the module's head.", "cat tabulate/__init__.py | head -3"),
    format_output("Nothing to change here; submit.", "submit"),
]
"""The model's replies, one per turn, fenced as the system prompt asks."""


def _answer(request: dict) -> str:
    turn = sum(message["role"] == "assistant" for message in request["messages"])
    return SCRIPT[min(turn, len(SCRIPT) - 1)].replace("</think>\n", "</think>\n```bash\n") + "\n```"


def _eval(shell: str, out: Path) -> tuple[ChatStub, dict, str]:
    """The CLI on one instance with the served model; the server's log, the trajectory the run wrote and what the
    CLI printed."""
    with serving(_answer) as stub:
        cmd = [sys.executable, "-m", "swe_srl.cli", "eval", "--policy", "openai", "--base-url", stub.url,
               "--model", "scripted", "--instances", INSTANCE, "--shell", shell, "-o", str(out)]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = json.loads((out / "results" / f"{INSTANCE}.json").read_text())
    assert record["exit_reason"] == "submitted" and record["steps"] == 3, record
    assert json.loads((out / "report.json").read_text())["settings"]["shell"] == shell
    (line,) = (out / "trajectories" / f"{INSTANCE}.jsonl").read_text().splitlines()
    return stub, json.loads(line), proc.stdout


def test_served_model_per_action_then_persistent(docker_engine, tmp_path: Path) -> None:
    stub, trajectory, printed = _eval(PER_ACTION, tmp_path / "per-action")
    assert "shell: per-action" in printed, printed
    assert len(stub.requests) == 3 and all(r["model"] == "scripted" for r in stub.requests)
    assert all(PER_ACTION_NOTE in r["messages"][0]["content"] for r in stub.requests)
    assert trajectory["shell"] == PER_ACTION
    listing, head = (step["observation"] for step in trajectory["steps"][:2])
    assert "__init__.py" in listing
    assert head.startswith('"""Pretty-print tabular data."""\n'), head  # the module's first line

    stub, trajectory, printed = _eval(PERSISTENT, tmp_path / "persistent")
    assert "shell:" not in printed, printed
    assert PER_ACTION_NOTE not in stub.requests[0]["messages"][0]["content"]
    assert trajectory["shell"] == PERSISTENT
    head = trajectory["steps"][1]["observation"]
    assert "tabulate/__init__.py: No such file" in head, head
