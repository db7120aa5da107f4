"""Worker processes die with their driver, and only the driver decides about Ctrl-C.

:func:`worker_init` is the initializer of every local pool process. It ignores SIGINT (a terminal's Ctrl-C reaches
the whole process group; the driver stops the workers itself, see ``LocalExecutor``), turns SIGTERM into
``SystemExit`` (``finally`` blocks and atexit close the worker's sandboxes), labels its containers with the
driver's run id, and ends the worker when its parent
goes away, even by SIGKILL: ``prctl(PR_SET_PDEATHSIG, SIGTERM)`` on Linux, and a watchdog thread polling
``os.getppid()`` everywhere (SIGTERM as soon as the parent changes, ``os._exit`` after :data:`GRACE_S`).
"""

from __future__ import annotations

import os
import signal
import threading
import time

from swe_srl.infra.orphan_guard import set_pdeathsig
from swe_srl.infra.sandbox import janitor, signals

POLL_S = 1.0
GRACE_S = 20.0
"""Seconds an orphaned worker may spend closing its sandboxes before it is ended hard."""


def worker_init(parent_pid: int, run_id: str) -> None:
    """Pool initializer (runs in the worker): die with ``parent_pid``, leave SIGINT to the driver, label containers
    with the driver's ``run_id``."""
    janitor.RUN_ID = run_id
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signals.install_sigterm_handler()
    set_pdeathsig(signal.SIGTERM)  # no libc: the watchdog alone
    threading.Thread(target=_watch, args=(parent_pid,), name="swe-srl-lifeline", daemon=True).start()


def _watch(parent_pid: int) -> None:
    """Also catches a parent that died before the prctl call (the worker was re-parented already)."""
    while os.getppid() == parent_pid:
        time.sleep(POLL_S)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(GRACE_S)
    os._exit(1)
