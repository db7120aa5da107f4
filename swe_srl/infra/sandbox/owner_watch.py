"""On Podman, a watcher removes a dead process's containers (Docker's engine does it by itself).

A sandbox's container ends with its owner (``tether.py``): PID 1 exits when the owner's stdin socket closes. Docker
then removes it (``auto_remove``); Podman 4's Docker-compatible API marks it ``AutoRemove`` but leaves it
``Exited`` when the owner was killed. So the first Podman sandbox of a process starts
``python -m swe_srl.infra.sandbox.owner_watch PID`` beside it, in a session of its own: it waits until ``PID`` is
gone (it is then no longer its parent), runs the janitor (:func:`janitor.reap`: containers whose process is gone)
and exits. An owner that ends cleanly has closed its sandboxes already; the watcher then finds nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from swe_srl.infra.sandbox import janitor

POLL_S = 0.5
_started: set[int] = set()
"""Pids of this interpreter that started a watcher (a forked worker starts its own)."""


def ensure_watcher() -> None:
    """Start this process's watcher unless it runs (idempotent, once per process)."""
    if os.getpid() in _started:
        return
    _started.add(os.getpid())
    subprocess.Popen([sys.executable, "-m", "swe_srl.infra.sandbox.owner_watch", str(os.getpid())],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True)  # fmt: skip


def main(argv: list[str]) -> int:
    owner = int(argv[0])
    while os.getppid() == owner:
        time.sleep(POLL_S)
    janitor.reap(ended=owner)  # the owner may be a zombie its parent has not reaped yet
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
