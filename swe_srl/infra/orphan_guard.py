"""A host command ends with the swe-srl process that started it, even when that process is SIGKILLed.

``python -m swe_srl.infra.orphan_guard PARENT_PID [--cleanup DIR] -- CMD...`` is what :func:`image_build.run_logged`
starts, in a session of its own: it runs ``CMD`` in a process group of its own and waits for it, passing its exit
status on. When the parent stops it (SIGTERM) or dies (SIGKILL included: Linux's parent-death signal, SIGHUP here,
or ``PARENT_PID`` no longer its parent), it ends ``CMD``'s group (``CMD`` and everything it started, such as
debootstrap's ``dpkg`` in a chroot): SIGTERM, up to :data:`GRACE_S` seconds, then SIGKILL. When the parent died, it
also unmounts what is mounted under ``DIR`` and removes ``DIR`` (a half-bootstrapped root file system), which the
dead parent can no longer do.

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
GRACE_S = 2.0
STOPS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}


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
    """SIGTERM or SIGINT: the parent stops the build (or a signal reached the guard directly)."""


class _Orphan(Exception):
    """SIGHUP, the parent-death signal: the thread that started the guard ended, so its process is dying."""


def _raise(exc: type[Exception]):
    def handler(signum: int, frame: object) -> None:
        raise exc

    return handler


def _group_alive(pgid: int) -> bool:
    """Whether a live process (not a zombie waiting for its new parent to reap it) is in group ``pgid``."""
    try:
        entries = [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:  # no /proc: ask the kernel, zombies included
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        return True
    for entry in entries:
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            state, _ppid, group = stat[stat.rindex(")") + 2 :].split()[:3]
        except (OSError, ValueError):  # gone meanwhile, or read mid-exit
            continue
        if group == str(pgid) and state not in ("Z", "X"):
            return True
    return False


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
    signal.signal(signal.SIGTERM, _raise(_Stop))
    signal.signal(signal.SIGINT, _raise(_Stop))
    signal.signal(signal.SIGHUP, _raise(_Orphan))
    set_pdeathsig(signal.SIGHUP)  # not SIGTERM: a parent's deliberate stop and its death are told apart
    if os.getppid() != parent:  # the parent died before the prctl call
        return _orphaned(None, cleanup)
    signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)  # no stop half-way through starting CMD
    proc = subprocess.Popen(cmd, preexec_fn=_own_group)
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)  # a stop that came meanwhile is raised here
        while (code := proc.poll()) is None:
            if os.getppid() != parent:
                raise _Orphan
            time.sleep(POLL_S)
        return code if code >= 0 else 128 - code
    except _Orphan:
        return _orphaned(proc, cleanup)
    except _Stop:
        return _stopped(proc, cleanup)


def _own_group() -> None:
    """In CMD before exec: a process group of its own (the guard ends it and lives on), signals unblocked."""
    os.setpgrp()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)


def _stopped(proc: subprocess.Popen, cleanup: Path | None) -> int:
    """Stopped by the parent: end the command and leave ``cleanup`` to the parent, unless it dies meanwhile."""
    died = []
    _ignore_stops()
    signal.signal(signal.SIGHUP, lambda signum, frame: died.append(signum))
    _end_group(proc)
    if died:
        _remove(cleanup)
    return 128 + signal.SIGTERM


def _orphaned(proc: subprocess.Popen | None, cleanup: Path | None) -> int:
    _ignore_stops()
    try:
        if proc is not None:
            _end_group(proc)
    finally:
        _remove(cleanup)
    return 1


def _ignore_stops() -> None:
    for sig in STOPS:
        signal.signal(sig, signal.SIG_IGN)


def _remove(cleanup: Path | None) -> None:
    if cleanup is not None:
        unmount_under(cleanup)
        shutil.rmtree(cleanup, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
