"""A host command of an image build (debootstrap, ``docker import``) ends with its run: Ctrl-C or SIGTERM of the
process running :func:`run_logged` stops the command and every process it started (a real process tree)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

PROGRAM = """
from swe_srl.infra.image_build import run_logged
from swe_srl.infra.sandbox.signals import install_sigterm_handler

install_sigterm_handler()  # as every swe-srl command does
run_logged(["bash", "-c", "sleep 300 & sleep 301 & wait"], "debootstrap test for t", None)
"""


def _sleeps_below(root: int) -> list[int]:
    """Pids of this test's ``sleep`` processes (marked by ``root`` in their environment; orphans included)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmdline[:2] in ([b"sleep", b"300"], [b"sleep", b"301"]) and _env_marker(int(entry), root):
            found.append(int(entry))
    return found


def _env_marker(pid: int, root: int) -> bool:
    try:
        return f"SWE_SRL_TEST_ROOT={root}".encode() in Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_interrupted_build_command_leaves_no_process(sig: int) -> None:
    marker = str(os.getpid())
    env = {**os.environ, "SWE_SRL_TEST_ROOT": marker}
    proc = subprocess.Popen([sys.executable, "-c", PROGRAM], env=env, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    deadline = time.monotonic() + 60
    while len(_sleeps_below(int(marker))) < 2:
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.2)
    proc.send_signal(sig)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while (left := _sleeps_below(int(marker))) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"processes left after {signal.Signals(sig).name}: {left}"
