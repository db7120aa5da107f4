"""Stopping the Podman service swe-srl started finds its processes through /proc (real processes, no Podman): the
service and the ``podman system service`` processes of its group end (rootless Podman's re-executed child, the one
serving, outlived a parent stopped alone), another process of the group (a conmon) does not. The pause process and
the rest of a refused rootless start are checked on real rootless Podman by scripts/test_podman.sh."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from swe_srl.infra import podman_procs as procs

SLEEP = "import time; time.sleep(60)"


def _children(parent: int, count: int) -> list[int]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        kids = [int(p) for p in Path(f"/proc/{parent}/task/{parent}/children").read_text().split()]
        if len(kids) == count and all(Path(f"/proc/{k}/cmdline").read_bytes()[:6] in (b"podman", b"conmon")
                                      for k in kids):  # fmt: skip
            return kids
        time.sleep(0.05)
    raise AssertionError(f"the children of {parent} did not start")


def test_the_service_and_its_serving_child_end_and_the_rest_of_its_group_stays() -> None:
    # The service swe-srl spawned (its own session and group) with two children named as Podman names them.
    script = (f"exec -a podman {sys.executable} -c '{SLEEP}' system service & "
              f"exec -a conmon {sys.executable} -c '{SLEEP}' & wait")  # fmt: skip
    leader = subprocess.Popen(["bash", "-c", script], start_new_session=True)
    kids = _children(leader.pid, 2)
    try:
        serving = [k for k in kids if Path(f"/proc/{k}/cmdline").read_bytes().startswith(b"podman\0")]
        conmon = [k for k in kids if k not in serving]
        assert len(serving) == len(conmon) == 1
        found = procs.service_processes(leader.pid)
        assert sorted(found) == sorted([leader.pid, *serving])
        procs.end(found)
        assert not procs._live(leader.pid) and not procs._live(serving[0])
        assert procs._live(conmon[0])
    finally:
        for pid in [leader.pid, *kids]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        leader.wait(timeout=10)
