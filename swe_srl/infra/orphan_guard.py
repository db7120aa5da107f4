"""A host command ends with the swe-srl process that started it, even when that process is SIGKILLed.

``python -m swe_srl.infra.orphan_guard PARENT_PID [--cleanup DIR] -- CMD...`` is what :func:`image_build.run_logged`
starts, in a session of its own: it runs ``CMD`` in its process group and waits for it, passing its exit status on.
When ``PARENT_PID`` stops being its parent (the parent died, SIGKILL included: the guard is re-parented) or the
guard gets SIGTERM, it ends ``CMD``'s process group (``CMD`` and everything it started, such as debootstrap's ``dpkg`` in a
chroot): SIGTERM, up to :data:`GRACE_S` seconds, then SIGKILL. ``CMD`` gets a group of its own, so the guard
outlives it to clean up. Orphaned, it also unmounts what is mounted under
``DIR`` and removes ``DIR`` (a half-bootstrapped root file system), which the dead parent can no longer do.

It imports nothing heavy: it starts for every logged host command.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

PR_SET_PDEATHSIG = 1
POLL_S = 0.5
GRACE_S = 3.0


def set_pdeathsig(sig: int) -> None:
    """Ask Linux to send ``sig`` to this process when its parent dies (a no-op elsewhere or without libc)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)


def unmount_under(root: Path) -> None:
    """Unmount anything a failed or killed debootstrap left mounted under ``root`` (before the dir is deleted)."""
    prefix = str(root.resolve())
    mounts = [
        line.split()[1] for line in Path("/proc/mounts").read_text().splitlines() if len(line.split()) > 1
    ]
    for mount in sorted((m for m in mounts if m == prefix or m.startswith(prefix + "/")), reverse=True):
        subprocess.run(["umount", "-l", mount], check=False, capture_output=True)


def guarded(cmd: list[str], cleanup: Path | None = None) -> list[str]:
    """The command line that runs ``cmd`` under a guard tied to this process."""
    extra = ["--cleanup", str(cleanup)] if cleanup is not None else []
    return [sys.executable, "-m", "swe_srl.infra.orphan_guard", str(os.getpid()), *extra, "--", *cmd]


class _Stop(Exception):
    pass


def _raise_stop(signum: int, frame: object) -> None:
    raise _Stop


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _end_group(proc: subprocess.Popen) -> None:
    """SIGTERM to the command's process group, up to :data:`GRACE_S` seconds for it to empty, then SIGKILL."""
    for sig, wait_s in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, GRACE_S)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            proc.poll()  # reaps the command itself; what it started is reaped by its new parent
            if not _group_alive(proc.pid):
                return
            time.sleep(0.05)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parent, rest = int(argv[0]), argv[1:]
    cleanup = Path(rest[1]) if rest[:1] == ["--cleanup"] else None
    cmd = rest[rest.index("--") + 1 :]
    signal.signal(signal.SIGTERM, _raise_stop)
    signal.signal(signal.SIGINT, _raise_stop)
    set_pdeathsig(signal.SIGTERM)
    if os.getppid() != parent:  # the parent died before the prctl call
        return _orphaned(None, cleanup)
    proc = subprocess.Popen(cmd, preexec_fn=os.setpgrp)  # its own group: the guard can end it and live on
    try:
        while (code := proc.poll()) is None:
            if os.getppid() != parent:
                return _orphaned(proc, cleanup)
            time.sleep(POLL_S)
        return code if code >= 0 else 128 - code
    except _Stop:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)
        if os.getppid() != parent:
            return _orphaned(proc, cleanup)
        _end_group(proc)  # stopped by the parent, which cleans up itself
        return 128 + signal.SIGTERM


def _orphaned(proc: subprocess.Popen | None, cleanup: Path | None) -> int:
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    if proc is not None:
        _end_group(proc)
    if cleanup is not None:
        unmount_under(cleanup)
        shutil.rmtree(cleanup, ignore_errors=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())
