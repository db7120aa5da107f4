"""SIGTERM as ``SystemExit``: ``finally`` blocks and atexit handlers (which close live sandboxes) run when a process
is stopped. Light on purpose: every ``swe-srl`` command installs it before importing its own stack."""

from __future__ import annotations

import signal
import sys
import threading


def install_sigterm_handler() -> None:
    """Turn SIGTERM into ``SystemExit`` so ``finally`` blocks and atexit close the containers (main thread only)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
