"""A host command ends with the swe-srl process that started it, even when that process is SIGKILLed.

``python -m swe_srl.infra.orphan_guard PARENT_PID [--cleanup DIR] [--reap-build TOKEN] -- CMD...`` is what
:func:`image_build.run_logged` starts, in a session of its own: it runs ``CMD`` in a process group of its own and
waits for it, passing its exit status on. When the parent stops it (SIGTERM) or dies (SIGKILL included: Linux's
parent-death signal, SIGHUP here, or ``PARENT_PID`` no longer its parent), it ends every process below it: ``CMD``
and everything it started, such as debootstrap's ``dpkg`` in a chroot or the RUN step of a ``podman build``, which
runs in a session of its own (the guard is a child subreaper, so what loses its parent stays below it): SIGTERM to
``CMD``'s group, up to :data:`GRACE_S` seconds, then SIGKILL to each process left. It then removes the working
containers of the Podman build marked ``TOKEN`` (``podman_build.reap_build``). When the parent died, it also
unmounts what is mounted under ``DIR`` and removes ``DIR`` (a half-bootstrapped root file system), which the dead
parent can no longer do.

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
PR_SET_CHILD_SUBREAPER = 36
POLL_S = 0.5
GRACE_S = 2.0
KILL_S = 10.0
REAP_S = 15.0
STOPS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}


def set_pdeathsig(sig: int) -> None:
    """Ask Linux to send ``sig`` to this process when its parent dies (a no-op elsewhere or without libc)."""
    _prctl(PR_SET_PDEATHSIG, int(sig))


def _prctl(option: int, value: int) -> None:
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def unmount_under(root: Path) -> None:
    """Unmount anything a failed or killed debootstrap left mounted under ``root`` (before the dir is deleted)."""
    prefix = str(root.resolve())
    mounts = [
        line.split()[1] for line in Path("/proc/mounts").read_text().splitlines() if len(line.split()) > 1
    ]
    for mount in sorted((m for m in mounts if m == prefix or m.startswith(prefix + "/")), reverse=True):
        subprocess.run(["umount", "-l", mount], check=False, capture_output=True)


def guarded(cmd: list[str], cleanup: Path | None = None, reap_build: str | None = None) -> list[str]:
    """The command line that runs ``cmd`` under a guard tied to this process."""
    extra = ["--cleanup", str(cleanup)] if cleanup is not None else []
    extra += ["--reap-build", reap_build] if reap_build is not None else []
    return [sys.executable, "-m", "swe_srl.infra.orphan_guard", str(os.getpid()), *extra, "--", *cmd]


class _Stop(Exception):
    """SIGTERM or SIGINT: the parent stops the build (or a signal reached the guard directly)."""


class _Orphan(Exception):
    """SIGHUP, the parent-death signal: the thread that started the guard ended, so its process is dying."""


def _raise(exc: type[Exception]):
    def handler(signum: int, frame: object) -> None:
        raise exc

    return handler


def _table() -> dict[int, tuple[int, str]]:
    """Every process now: pid → (parent pid, state)."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
        except (OSError, ValueError):  # gone meanwhile, or read mid-exit
            continue
        table[int(entry)] = (int(ppid), state)
    return table


def _below(root: int, skip: int) -> list[int]:
    """The live processes below ``root`` (zombies not counted); zombie children of ``root`` other than ``skip``
    (the command, which its ``Popen`` reaps) are reaped on the way: they were orphans handed to the guard."""
    table, found, frontier = _table(), [], [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, state) in table.items():
            if ppid != parent:
                continue
            if state in ("Z", "X"):
                if parent == root and pid != skip:
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(pid, os.WNOHANG)
                continue
            found.append(pid)
            frontier.append(pid)
    return found


def _end_tree(proc: subprocess.Popen) -> None:
    """SIGTERM to the command's group, up to :data:`GRACE_S` seconds for everything below the guard to end, then
    SIGKILL to each process left (other sessions included), until none is left or :data:`KILL_S` passed."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    me, deadline = os.getpid(), time.monotonic() + GRACE_S
    while time.monotonic() < deadline:
        proc.poll()  # reaps the command itself
        if not _below(me, proc.pid):
            return
        time.sleep(0.05)
    deadline = time.monotonic() + KILL_S
    while (left := _below(me, proc.pid)) and time.monotonic() < deadline:
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
        proc.poll()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parent, options, cmd = int(argv[0]), argv[1 : argv.index("--")], argv[argv.index("--") + 1 :]
    cleanup = Path(options[options.index("--cleanup") + 1]) if "--cleanup" in options else None
    token = options[options.index("--reap-build") + 1] if "--reap-build" in options else None
    signal.signal(signal.SIGTERM, _raise(_Stop))
    signal.signal(signal.SIGINT, _raise(_Stop))
    signal.signal(signal.SIGHUP, _raise(_Orphan))
    set_pdeathsig(signal.SIGHUP)  # not SIGTERM: a parent's deliberate stop and its death are told apart
    _prctl(PR_SET_CHILD_SUBREAPER, 1)  # what loses its parent below the guard is handed to the guard
    if os.getppid() != parent:  # the parent died before the prctl call
        return _orphaned(None, cleanup, token)
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
        return _orphaned(proc, cleanup, token)
    except _Stop:
        return _stopped(proc, cleanup, token)


def _own_group() -> None:
    """In CMD before exec: a process group of its own (the guard ends it and lives on), signals unblocked."""
    os.setpgrp()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)


def _stopped(proc: subprocess.Popen, cleanup: Path | None, token: str | None) -> int:
    """Stopped by the parent: end the command and leave ``cleanup`` to the parent, unless it dies meanwhile."""
    died = []
    _ignore_stops()
    signal.signal(signal.SIGHUP, lambda signum, frame: died.append(signum))
    _end_tree(proc)
    _reap_build(token)
    if died:
        _remove(cleanup)
    return 128 + signal.SIGTERM


def _orphaned(proc: subprocess.Popen | None, cleanup: Path | None, token: str | None) -> int:
    _ignore_stops()
    try:
        if proc is not None:
            _end_tree(proc)
        _reap_build(token)
    finally:
        _remove(cleanup)
    return 1


def _reap_build(token: str | None) -> None:
    """Remove the working containers of the stopped Podman build marked ``token`` (its own cleanup never ran), in
    a process of its own (``python -m swe_srl.infra.podman_build reap TOKEN``: the guard stays light)."""
    if token is None:
        return
    cmd = [sys.executable, "-m", "swe_srl.infra.podman_build", "reap", token]
    # on failure the janitor removes them later (their run is gone)
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=REAP_S, check=False)


def _ignore_stops() -> None:
    for sig in STOPS:
        signal.signal(sig, signal.SIG_IGN)


def _remove(cleanup: Path | None) -> None:
    if cleanup is not None:
        unmount_under(cleanup)
        shutil.rmtree(cleanup, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
