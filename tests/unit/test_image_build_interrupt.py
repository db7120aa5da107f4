"""A host command of an image build (debootstrap, ``docker import``) ends with its run: Ctrl-C, SIGTERM or SIGKILL
of the process running :func:`run_logged` stops the command and every process it started (a real process tree),
also in a session of its own (as ``podman build`` runs a RUN step) or orphaned by a parent that exited; after a
SIGKILL the guard also removes the half-built directory the run can no longer remove."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from swe_srl.errors import ImageBuildError
from swe_srl.infra.image_build import run_logged

PROGRAM = """
import sys
from pathlib import Path
from swe_srl.infra.image_build import run_logged
from swe_srl.infra.sandbox.signals import install_sigterm_handler

install_sigterm_handler()  # as every swe-srl command does
scratch = Path(sys.argv[1])
script = "sleep 300 & sleep 301 & setsid sleep 302 & (setsid sleep 303 &); wait"
cmd = ["bash", "-c", f"touch {scratch}/half-built; {script}"]
run_logged(cmd, "debootstrap test for t", None, cleanup=scratch)
"""


SLEEPS = (300, 301, 302, 303)


def _sleeps_below(root: int) -> list[int]:
    """Pids of this test's ``sleep`` processes (marked by ``root`` in their environment; orphans included)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmdline[:2] in ([b"sleep", str(n).encode()] for n in SLEEPS) and _env_marker(int(entry), root):
            found.append(int(entry))
    return found


def _env_marker(pid: int, root: int) -> bool:
    try:
        return f"SWE_SRL_TEST_ROOT={root}".encode() in Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_interrupted_build_command_leaves_no_process(sig: int, tmp_path: Path) -> None:
    marker = str(os.getpid())
    env = {**os.environ, "SWE_SRL_TEST_ROOT": marker}
    scratch = tmp_path / "rootfs-scratch"
    scratch.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", PROGRAM, str(scratch)], env=env, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    deadline = time.monotonic() + 60
    while len(_sleeps_below(int(marker))) < len(SLEEPS):
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
    if sig == signal.SIGKILL:  # the run cannot clean up: its guard does, once the command's group is gone
        deadline = time.monotonic() + 30
        while scratch.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not scratch.exists(), sorted(p.name for p in scratch.iterdir())
    else:  # the run's own cleanup (its ``finally``) owns the directory; the guard left it alone
        assert (scratch / "half-built").exists()


def test_the_guard_passes_the_exit_status_and_output_on() -> None:
    with pytest.raises(ImageBuildError, match=r"exit code 3[\s\S]*last words"):
        run_logged(["bash", "-c", "echo last words; exit 3"], "docker import test:t", None)
    run_logged(["bash", "-c", "exit 0"], "docker import test:t", None)
