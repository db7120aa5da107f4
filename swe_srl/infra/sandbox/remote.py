"""Sandboxes on other machines: a Ray actor holds one ``DockerSandbox`` on a sandbox node; :class:`RemoteSandbox`
is its driver-side proxy with the same methods, so the env, the rewards and the grader never ask where it lives.

* **Placement.** Each actor takes one unit of :data:`~swe_srl.infra.sandbox.placement.SANDBOX_RESOURCE` (declared
  by ``swe-srl worker --sandboxes N`` on its node) and no CPU, spread over the nodes (``SPREAD``). A start that
  finds no free unit waits for one (a line on stderr every :data:`WAIT_REPORT_S` while it waits); it is never refused.
* **Images** are built or pulled on the node that runs the sandbox: an instance's image is resolved there by the
  same file-locked ``instance_image`` a local run uses, so the asking process needs no engine at all.
* **Faults.** An actor or node that is lost raises :class:`SandboxLost` (a ``SandboxError``: an infrastructure
  error, never a reward 0). The actor's container ends with the actor's process (``tether.py``), and Ray ends a
  driver's actors when the driver ends (Ctrl-C and SIGKILL included), so a dead driver leaves no container; what an
  engine that was down meanwhile kept, ``swe-srl janitor`` on that node removes (the actor's pid is gone).
* **Settings.** Each actor gets this process's :data:`~swe_srl.infra.executor.ray_backend.FORWARDED_ENV`, its run id
  (the containers' ``swe-srl.run-id`` label) and ``SWE_SRL_SANDBOXES=local`` as its ``runtime_env``.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from swe_srl.benchmark.instances import Instance
from swe_srl.errors import ExecutorError, SandboxError
from swe_srl.infra.executor.ray_backend import FORWARDED_ENV, connect
from swe_srl.infra.recipes import instance_image
from swe_srl.infra.sandbox import janitor
from swe_srl.infra.sandbox.base import ExecResult, Patch, SandboxSpec
from swe_srl.infra.sandbox.docker import DockerSandbox
from swe_srl.infra.sandbox.placement import NODE_RESOURCE, SANDBOX_RESOURCE, SANDBOXES_ENV, sandbox_address

WAIT_REPORT_S = 10.0
"""How often a start that waits for a free sandbox slot says so."""
CLOSE_S = 60.0
FORWARDED = ("apply_patch", "kill_background", "restart_clock", "alive", "disk_used")
"""``DockerSandbox`` methods beyond the protocol that callers use (grading, expert states, the effect layer, pools)."""


class SandboxLost(SandboxError):
    """The sandbox's actor or its node is gone (node lost, actor killed): an infrastructure error."""


class SandboxHost:
    """The Ray actor (on a sandbox node): one ``DockerSandbox``, its image resolved on this node."""

    def __init__(self) -> None:
        self.box: DockerSandbox | None = None

    def start(self, spec: SandboxSpec, instance: Instance | None, repos_dir: str | None) -> dict[str, Any]:
        if instance is not None:
            spec.image = instance_image(instance, repos_dir=Path(repos_dir) if repos_dir else None)
        import ray

        self.box = DockerSandbox(spec)
        self.box.start()
        node_id = ray.get_runtime_context().get_node_id()
        return {"container_id": self.box.container_id, "image": spec.image, "node": socket.gethostname(),
                "node_id": node_id, "pid": os.getpid()}  # fmt: skip

    def call(self, name: str, *args: Any) -> Any:
        if self.box is None:
            raise SandboxError("the remote sandbox is not started")
        return getattr(self.box, name)(*args)

    def close(self) -> None:
        if self.box is not None:
            self.box.close()


_connect_lock = threading.Lock()
_actor_class = None
_waiting = 0
_waiting_lock = threading.Lock()


def connected_ray(address: str):
    """Ray, connected to ``address`` (once per process; no local cluster is started: it would have no sandbox
    nodes)."""
    import ray

    with _connect_lock:
        if not ray.is_initialized():
            _probe(address)
            connect(address, 0, start_local=False)
    return ray


def _probe(address: str, timeout_s: float = 5.0) -> None:
    """``ExecutorError`` at once when nothing listens at ``address``'s host:port (Ray itself retries for minutes)."""
    if address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except (OSError, ValueError) as exc:
        raise ExecutorError(f"--sandboxes ray:{address}: no Ray cluster answers there ({exc}); start its head with "
                            "`swe-srl worker --sandboxes N` and give its address") from None  # fmt: skip


def ensure_reachable() -> None:
    """With remote sandboxes (``$SWE_SRL_SANDBOXES``): connect now, so a wrong address is one line before any work,
    and say on stderr when no node offers sandbox slots yet (starts will wait for one). Nothing for ``local``."""
    if (address := sandbox_address()) is None:
        return
    ray = connected_ray(address)
    if not ray.cluster_resources().get(SANDBOX_RESOURCE):
        print(f"swe-srl: {_slots(ray)}; sandboxes wait until one joins", file=sys.stderr, flush=True)


def actor_options(resource: str = SANDBOX_RESOURCE) -> dict[str, Any]:
    """Placement and settings of one sandbox actor or node task: a unit of ``resource`` (a sandbox slot, or
    :data:`~swe_srl.infra.sandbox.placement.NODE_RESOURCE`), no CPU, spread; the forwarded environment."""
    env = {name: os.environ[name] for name in FORWARDED_ENV if name in os.environ}
    env |= {SANDBOXES_ENV: "local", janitor.RUN_ID_ENV: janitor.RUN_ID}
    return {"num_cpus": 0, "resources": {resource: 1}, "scheduling_strategy": "SPREAD",
            "runtime_env": {"env_vars": env}}  # fmt: skip


def _lost(ray, exc: BaseException, what: str) -> SandboxError:
    if isinstance(exc, ray.exceptions.RayTaskError) and isinstance(exc.cause, Exception):
        return exc.cause  # the sandbox's own exception (SandboxError, FileNotFoundError, ...)
    return SandboxLost(f"{what}: its Ray actor or node is gone ({type(exc).__name__}: {str(exc)[:300]})")


def wait_for(ray, ref, what: str) -> Any:
    """``ray.get(ref)``, saying on stderr every :data:`WAIT_REPORT_S` that it still waits (queued for a free sandbox
    slot, or building its image), with the free slots and how many of this process's starts wait."""
    global _waiting
    started = time.monotonic()
    ready, _ = ray.wait([ref], timeout=WAIT_REPORT_S)
    if not ready:
        with _waiting_lock:
            _waiting += 1
        try:
            while not ready:
                print(f"swe-srl: {what} not ready after {time.monotonic() - started:.0f}s (queued for a sandbox slot, "
                      f"or building its image); {_slots(ray)}; {_waiting} waiting here", file=sys.stderr, flush=True)  # fmt: skip
                ready, _ = ray.wait([ref], timeout=WAIT_REPORT_S)
        finally:
            with _waiting_lock:
                _waiting -= 1
    try:
        return ray.get(ref)
    except ray.exceptions.RayError as exc:
        raise _lost(ray, exc, what) from None


def _slots(ray) -> str:
    total = ray.cluster_resources().get(SANDBOX_RESOURCE, 0)
    if not total:
        return (
            f"no node declares {SANDBOX_RESOURCE}: start `swe-srl worker --sandboxes N` on the sandbox nodes"
        )
    return f"sandbox slots free: {ray.available_resources().get(SANDBOX_RESOURCE, 0):g} of {total:g}"


class RemoteSandbox:
    """A ``DockerSandbox`` on a sandbox node of the Ray cluster at ``address``; ``start()`` (or ``with``) places it,
    ``close()`` removes it. ``instance``: the image is that instance's, resolved (built) on the node."""

    def __init__(
        self,
        spec: SandboxSpec,
        address: str = "auto",
        *,
        instance: Instance | None = None,
        repos_dir: Path | None = None,
    ) -> None:
        self.spec, self.address, self.instance = spec, address, instance
        self.repos_dir = str(repos_dir) if repos_dir else None
        self.container_id: str | None = None
        self.node: str | None = None
        """The host name of the sandbox's node (``node_id``: its Ray node id; ``pid``: the actor's process there)."""
        self.node_id: str | None = None
        self.pid: int | None = None
        self._actor = None
        self._closed = False

    def start(self) -> RemoteSandbox:
        global _actor_class
        if self._closed:
            raise SandboxError("this sandbox was closed; create a new RemoteSandbox")
        if self._actor is not None:
            return self
        ray = connected_ray(self.address)
        if _actor_class is None:
            _actor_class = ray.remote(max_restarts=0, max_task_retries=0)(SandboxHost)
        what = f"sandbox of {self.instance.instance_id if self.instance else self.spec.image}"
        self._actor = _actor_class.options(**actor_options()).remote()
        try:
            janitor.register(self)
            info = wait_for(ray, self._actor.start.remote(self.spec, self.instance, self.repos_dir), what)
        except BaseException:
            self.close()
            raise
        self.container_id, self.node, self.node_id = info["container_id"], info["node"], info["node_id"]
        self.pid = info["pid"]
        self.spec.image = info["image"]
        return self

    def _call(self, name: str, *args: Any) -> Any:
        if self._closed:
            raise SandboxError("this sandbox is closed; create a new sandbox")
        if self._actor is None:
            raise SandboxError("the sandbox is not started; call start() or use it as a context manager")
        ray = connected_ray(self.address)
        try:
            return ray.get(self._actor.call.remote(name, *args))
        except ray.exceptions.RayError as exc:
            raise _lost(ray, exc, f"sandbox {self.container_id} on {self.node}") from None

    def run(self, command: str, timeout: float | None = None) -> ExecResult:
        return self._call("run", command, timeout)

    def read_file(self, path: str) -> bytes:
        return self._call("read_file", path)

    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        self._call("write_file", path, data, mode)

    def diff(self) -> str:
        return self._call("diff")

    def patch(self) -> Patch:
        return self._call("patch")

    def __getattr__(self, name: str) -> Any:
        if name in FORWARDED:
            return lambda *args: self._call(name, *args)
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r} (a remote sandbox)")

    def close(self) -> None:
        """Remove the container and end the actor. Idempotent; a lost node is nothing left to close."""
        if self._closed:
            return
        self._closed = True
        janitor.unregister(self)
        actor, self._actor = self._actor, None
        if actor is None:
            return
        import ray

        if not ray.is_initialized():
            return  # the driver's connection is gone: Ray ends its actors, their containers with them
        if self.container_id is None:
            # its start has not returned (queued for a slot, building the image, failed): a close queued behind
            # it would wait for it; killing the actor cancels it, and a container it began is tethered to its process
            ray.kill(actor, no_restart=True)
            return
        try:
            ray.get(actor.close.remote(), timeout=CLOSE_S)
        except ray.exceptions.RayError:
            pass  # lost meanwhile: its container went with its process
        finally:
            ray.kill(actor, no_restart=True)

    def __enter__(self) -> RemoteSandbox:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def call_on_sandbox_node(fn, *args: Any, address: str = "auto", what: str = "task", **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` as a Ray task on a sandbox node (a unit of ``NODE_RESOURCE``, not a slot; spread),
    with its sandboxes local there: for work that needs the node's engine beyond one sandbox (grading's image
    provenance, an image's executables). A lost node raises :class:`SandboxLost`; ``fn``'s own exceptions come back
    as they are."""
    ray = connected_ray(address)
    task = ray.remote(max_retries=0)(_call_local)
    return wait_for(ray, task.options(**actor_options(NODE_RESOURCE)).remote(fn, args, kwargs), what)


def _call_local(fn, args: tuple, kwargs: dict) -> Any:
    return fn(*args, **kwargs)
