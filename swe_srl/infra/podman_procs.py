"""The processes of the Podman service swe-srl starts (``infra/podman.py``), found and stopped through ``/proc``.

Rootless Podman leaves two kinds of process a plain SIGTERM to the service's pid misses: the service's re-executed
child (the one serving, inside the user namespace), and the pause process that holds the user namespace for every
rootless ``podman`` of the user and outlives them all. A start records the pause process when it created it; a stop
ends it only when nothing else of the user's lives in that namespace, so a pause process the user's own Podman
created, or still uses, is left alone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from swe_srl import paths

STOP_S = 10.0


def runtime_dir() -> str:
    return os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"


def pause_pid() -> int | None:
    """Rootless Podman's pause process of this user (it holds the user namespace every rootless ``podman`` of the
    user joins; it outlives them), when it runs; None for root."""
    if os.geteuid() == 0:
        return None
    try:
        pid = int((Path(runtime_dir()) / "libpod/tmp/pause.pid").read_text().strip())
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except (OSError, ValueError):
        return None
    return pid if comm == "podman pause" and _live(pid) else None


def note_pause(before: int | None, record: Path) -> None:
    """Record in ``record`` the pause process a service start created (none ran before it): the service's to stop."""
    if (pause := pause_pid()) is not None and pause != before:
        paths.atomic_write_text(record, f"{pause}\n")


def stop_own_pause(record: Path) -> int | None:
    """Stop the pause process ``record`` names (a service start created it), when it still runs and no other
    process lives in its user namespace (the user's own Podman containers or commands keep it); its pid, or None."""
    try:
        pid = int(record.read_text().strip())
    except (OSError, ValueError):
        return None
    record.unlink(missing_ok=True)
    if pid != pause_pid():
        return None
    try:
        namespace = os.readlink(f"/proc/{pid}/ns/user")
    except OSError:
        return None
    for other in _pids():
        with contextlib.suppress(OSError):
            if other != pid and os.readlink(f"/proc/{other}/ns/user") == namespace and _live(other):
                return None
    end([pid])
    return pid


def _pids() -> list[int]:
    return [int(d.name) for d in Path("/proc").iterdir() if d.name.isdigit()]


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state first), None when gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None


def _live(pid: int) -> bool:
    fields = _stat(pid)  # a zombie has ended (its parent may never reap it)
    return fields is not None and fields[0] not in ("Z", "X")


def service_processes(pid: int) -> list[int]:
    """The service ``pid`` and the ``podman system service`` processes of its process group: rootless Podman
    re-executes itself in the user namespace, and that child, the one serving, outlives a parent stopped alone.
    (Conmons and containers are not among them: the janitor removes those.)"""
    found = [pid]
    for other in _pids():
        fields = _stat(other)
        if other == pid or not fields or int(fields[2]) != pid:
            continue
        with contextlib.suppress(OSError):
            argv = Path(f"/proc/{other}/cmdline").read_bytes().split(b"\0")
            if b"podman" in argv[0] and b"service" in argv:
                found.append(other)
    return found


def end(pids: list[int]) -> None:
    """SIGTERM, then SIGKILL after :data:`STOP_S`, until none of ``pids`` lives (``waitpid`` reaps our own)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + STOP_S
        while any(map(_live, pids)) and time.monotonic() < deadline:
            for pid in pids:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)  # our own child when started by this process
            time.sleep(0.1)
        if not any(map(_live, pids)):
            return
