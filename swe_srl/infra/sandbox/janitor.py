"""No leaks: container labels, a registry of live sandboxes closed at exit/SIGTERM, and the janitor for dead runs.

Without any of these a container still ends with its owner process (``tether.py``): its PID 1 reads a stdin socket
only the owner holds; when the owner dies (SIGKILL included) the kernel closes it, PID 1 exits and the engine removes
the auto-removed container. The registry
closes them sooner and cleanly (atexit, SIGTERM via ``signals.install_sigterm_handler``, a stopped executor's task
threads via :func:`stop_threads`); the janitor (:func:`reap`) is for engines that were down meanwhile.

Every swe-srl container carries ``swe-srl.owner=swe-srl``, ``swe-srl.run-id``, ``swe-srl.pid``, ``swe-srl.host``
and ``swe-srl.created-at`` (unix seconds), the step containers of an image build too (``image_build.run_labelled``;
the engine removes them itself when the build's connection closes, SIGKILL included). ``reap()`` removes those whose
creating process is gone (same host), that are older than a given age, or all of them; on Podman also the working
containers a killed ``podman build`` left (``podman_build``: they carry the same marks as build arguments).
"""

from __future__ import annotations

import atexit
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Protocol

import docker

from swe_srl.errors import SandboxError
from swe_srl.infra import podman_build
from swe_srl.infra.engine import docker_client

OWNER_LABEL = "swe-srl.owner"
OWNER = "swe-srl"
RUN_ID_ENV = "SWE_SRL_RUN_ID"
RUN_ID = os.environ.get(RUN_ID_ENV) or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
"""This process's run id (the default ``swe-srl.run-id`` label): ``$SWE_SRL_RUN_ID`` when set, else unique; the
workers of a local executor take their driver's (``executor.lifeline``), so one label names a whole run."""


def container_labels(run_id: str | None = None) -> dict[str, str]:
    """The labels of a container created now by this process."""
    return {
        OWNER_LABEL: OWNER,
        "swe-srl.run-id": run_id or RUN_ID,
        "swe-srl.pid": str(os.getpid()),
        "swe-srl.host": socket.gethostname(),
        "swe-srl.created-at": str(int(time.time())),
    }


class _Closable(Protocol):
    def close(self) -> None: ...


_live: dict[int, tuple[_Closable, str]] = {}
"""Live sandboxes of this process, with the name of the thread that started each."""
_stopped: set[str] = set()
"""Thread-name prefixes of stopped executors: sandboxes their threads start are closed at once."""
_lock = threading.Lock()
_atexit_installed = False


def register(sandbox: _Closable) -> None:
    """Track a started sandbox so it is closed at interpreter exit (also after SIGTERM, see below).

    In a thread of a stopped executor (:func:`stop_threads`) the sandbox is closed at once and ``SandboxError``
    raised: the run was stopped, no new work starts.
    """
    global _atexit_installed
    thread = threading.current_thread().name
    with _lock:
        stopped = any(thread.startswith(prefix) for prefix in _stopped)
        if not stopped:
            _live[id(sandbox)] = (sandbox, thread)
        if not _atexit_installed:
            atexit.register(close_all)
            _atexit_installed = True
    if stopped:
        sandbox.close()
        raise SandboxError(f"the run of thread {thread} was stopped; no new sandbox starts there")


def unregister(sandbox: _Closable) -> None:
    with _lock:
        _live.pop(id(sandbox), None)


def close_all(thread_prefix: str = "") -> None:
    """Close every live sandbox of this process, or those started by threads named ``thread_prefix…`` (idempotent)."""
    with _lock:
        live = [sandbox for sandbox, thread in _live.values() if thread.startswith(thread_prefix)]
    for sandbox in live:
        sandbox.close()


def stop_threads(thread_prefix: str) -> None:
    """A stopped executor: close the sandboxes of its task threads (their episodes end with an error at once) and
    refuse the sandboxes they would start next (grading after the episode)."""
    with _lock:
        _stopped.add(thread_prefix)
    close_all(thread_prefix)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class Reaped:
    """One container the janitor removed, and why."""

    container_id: str
    name: str
    reason: str


def orphan_reason(
    labels: dict[str, str], *, older_than_h: float | None, everything: bool, ended: int | None = None
) -> str | None:
    """Why a container with ``labels`` should be removed now, or None to keep it (pure function). ``ended``: the pid
    of a process of this host known to have ended (it may still be a zombie, which ``kill -0`` cannot tell)."""
    if everything:
        return "--all"
    created = float(labels.get("swe-srl.created-at", "0") or 0)
    age_h = (time.time() - created) / 3600
    if older_than_h is not None and age_h > older_than_h:
        return f"older than {older_than_h:g} h ({age_h:.1f} h)"
    pid = labels.get("swe-srl.pid", "")
    here = labels.get("swe-srl.host") == socket.gethostname()
    if here and pid.isdigit() and (int(pid) == ended or not _pid_alive(int(pid))):
        return f"its process {pid} is gone"
    return None


def reap(
    *, older_than_h: float | None = None, everything: bool = False, ended: int | None = None
) -> list[Reaped]:
    """Remove swe-srl containers of dead runs (or older than ``older_than_h``, or all; ``ended``: see
    :func:`orphan_reason`); return what was removed."""

    reaped = []
    client = docker_client()
    # sparse: no inspect per container, which fails for one that ends meanwhile (they remove themselves)
    for container in client.containers.list(
        all=True, sparse=True, filters={"label": f"{OWNER_LABEL}={OWNER}"}
    ):
        labels = container.attrs.get("Labels") or {}
        reason = orphan_reason(labels, older_than_h=older_than_h, everything=everything, ended=ended)
        if reason is None:
            continue
        try:
            container.remove(force=True)
        except docker.errors.NotFound:
            continue
        name = (container.attrs.get("Names") or [container.id[:12]])[0].lstrip("/")
        reaped.append(Reaped(container.id, name, reason))
    working = []
    for build in podman_build.working_containers():
        reason = orphan_reason(build.labels, older_than_h=older_than_h, everything=everything, ended=ended)
        if reason is not None:
            working.append(Reaped(build.id, build.name, reason))
    podman_build.remove_working([item.container_id for item in working])
    return reaped + working
