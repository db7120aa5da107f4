"""The Ray backend of :mod:`swe_srl.infra.executor` (``pip install 'swe-srl[ray]'``).

``--ray auto`` attaches to the cluster of this machine (``ray start`` / ``RAY_ADDRESS``) or starts a small local
one; ``--ray ray://host:10001`` joins a remote cluster through Ray Client; ``host:6379`` joins as a driver. Each
task takes one CPU on some node and runs its sandboxes on that node's Docker engine; images are built there on
first use (the ensure_* functions are idempotent and file-locked), no registry involved. A task whose worker
process or node dies is resubmitted by Ray (``max_retries``); exceptions raised by the task are not retried. The
settings a worker must share with this process (:data:`FORWARDED_ENV`: the image source ``--image-source`` chose,
the grading network) travel with each task as its ``runtime_env``: a remote node's workers never saw them.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Callable
from typing import Any

from swe_srl.errors import ConfigError, ExecutorError
from swe_srl.infra.executor.base import DEFAULT_RETRIES, Executor, Task, call_task, reap_node
from swe_srl.infra.sandbox.base import GRADING_NETWORK_ENV
from swe_srl.infra.sources import IMAGE_SOURCE_ENV

FORWARDED_ENV = (IMAGE_SOURCE_ENV, GRADING_NETWORK_ENV)
"""Environment variables each Ray task gets from this process (where set)."""
LOCAL_OBJECT_STORE = 100 * 1024 * 1024
"""Object store of a cluster started by ``--ray auto``: tasks pass small records, not tensors."""
KEEP_FAULTHANDLER_ENV = "RAY_DISABLE_FAILURE_SIGNAL_HANDLER"
"""Ray's own switch; swe-srl sets it to 1 unless it is set: a Ray driver otherwise replaces the process's SIGSEGV and
SIGABRT handlers with one that writes to Ray's session log, and a later crash of the process (Ray's session over or
not) prints no Python traceback (faulthandler) at all."""


def _ray():
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "--ray needs the ray extra: pip install 'swe-srl[ray]' (or 'ray[default]>=2.40,<3')"
        ) from None
    return ray


def connect(address: str, workers: int, *, start_local: bool = True) -> bool:
    """Connect this process to Ray at ``address``; True when this call initialized Ray (so close() shuts it).
    ``auto`` with no cluster here starts a local one, unless ``start_local`` is False (then ``ExecutorError``)."""
    ray = _ray()
    if ray.is_initialized():
        return False
    _keep_faulthandler()
    quiet: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
    if address == "auto":
        try:
            ray.init(address="auto", **quiet)
        except ConnectionError:  # nothing running here: a local cluster that lives as long as this process
            if not start_local:
                raise ExecutorError(
                    "no Ray cluster runs here (address 'auto'); start one with `swe-srl worker --sandboxes N` "
                    "or name its address (ray:HOST:6379)"
                ) from None
            ray.init(
                num_cpus=max(workers, 1),
                include_dashboard=False,
                object_store_memory=LOCAL_OBJECT_STORE,
                **quiet,
            )
        return True
    if not (address.startswith("ray://") or ":" in address):
        raise ConfigError(f"--ray {address!r}: use 'auto', 'ray://host:10001' or 'host:6379'")
    try:
        ray.init(address=address, **quiet)
    except ConnectionError as exc:
        raise ExecutorError(
            f"no Ray cluster answers at {address!r} ({exc}); start one with `ray start --head`"
        ) from None
    return True


def _keep_faulthandler() -> None:
    """Before ``ray.init``: :data:`KEEP_FAULTHANDLER_ENV` is 1 unless it is set (the workers this process starts
    inherit it), and the imported ray is told so (it read the variable once, at import; ``ray.init`` looks it up)."""
    if os.environ.setdefault(KEEP_FAULTHANDLER_ENV, "1") != "1":
        return
    try:
        from ray._private import ray_constants
    except ImportError:  # another layout: the variable set before the import is what counts
        return
    ray_constants.RAY_DISABLE_FAILURE_SIGNAL_HANDLER = True


class RayExecutor(Executor):
    """Tasks as Ray tasks (1 CPU each), at most ``workers`` in flight (0 → the cluster's CPU count)."""

    name = "ray"

    def __init__(
        self, address: str = "auto", workers: int = 0, *, max_retries: int = DEFAULT_RETRIES
    ) -> None:
        self.address = address
        self._owns = connect(address, workers)
        ray = _ray()
        cpus = int(ray.cluster_resources().get("CPU", 0))
        super().__init__(workers or max(cpus, 1), max_retries=max_retries)

    def _run(self, tasks: list[Task], deliver: Callable, fail: Callable) -> None:
        ray = _ray()
        remote = ray.remote(call_task)
        opts: dict[str, Any] = {"num_cpus": 1, "max_retries": self.max_retries, "retry_exceptions": False}
        if env := {name: os.environ[name] for name in FORWARDED_ENV if name in os.environ}:
            opts["runtime_env"] = {"env_vars": env}
        pending, inflight = deque(tasks), {}
        try:
            self._loop(ray, remote, opts, pending, inflight, deliver, fail)
        except (
            BaseException
        ):  # stopped (Ctrl-C): cancel the tasks in flight (KeyboardInterrupt in each) and go
            for ref in inflight:
                ray.cancel(ref)
            raise

    def _loop(
        self, ray, remote, opts, pending: deque, inflight: dict, deliver: Callable, fail: Callable
    ) -> None:
        while pending or inflight:
            while pending and len(inflight) < self.workers:
                task = pending.popleft()
                ref = remote.options(name=f"swe-srl:{task.key}", **opts).remote(
                    task.fn, task.args, dict(task.kwargs)
                )
                inflight[ref] = task
                self.in_flight.add(task.key)
            ready, _ = ray.wait(list(inflight), num_returns=1)
            for ref in ready:
                task = inflight.pop(ref)
                self.in_flight.discard(task.key)
                try:
                    value, worker = ray.get(ref)
                except ray.exceptions.RayTaskError as exc:  # the task raised: its own exception, not retried
                    fail(task.key, exc.cause if isinstance(exc.cause, Exception) else exc)
                except ray.exceptions.RayError as exc:  # worker/node lost more than max_retries times
                    fail(
                        task.key,
                        ExecutorError(f"task {task.key!r} lost after {self.max_retries} retries: {exc}"),
                    )
                else:
                    deliver(task.key, value, worker)

    def reap_orphans(self) -> int:
        """Run the janitor once on every live node (containers of dead workers); returns how many were removed."""
        ray = _ray()
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        reap = ray.remote(reap_node)
        refs = [
            reap.options(
                num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
            ).remote()
            for node in ray.nodes()
            if node["Alive"]
        ]
        removed = 0
        for ref in refs:
            try:
                removed += ray.get(ref, timeout=120)
            except ray.exceptions.RayError:  # the node left meanwhile; its engine's janitor runs later
                continue
        return removed

    def close(self) -> None:
        """Disconnect (and stop the local cluster ``--ray auto`` started); idempotent."""
        if self._owns:
            _ray().shutdown()
            self._owns = False
