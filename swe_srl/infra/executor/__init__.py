"""One execution interface, two backends: a local worker pool (default) and a Ray cluster (``--ray``).

See ``base.py`` for the contract (tasks, keys, retries, failures) and docs/scale-out.md.
"""

from __future__ import annotations

from swe_srl.infra.executor.base import (
    DEFAULT_RETRIES,
    Executor,
    RunStats,
    Task,
    TaskFailed,
    call_task,
    reap_node,
)
from swe_srl.infra.executor.local import LocalExecutor
from swe_srl.infra.executor.ray_backend import RayExecutor

__all__ = [
    "DEFAULT_RETRIES",
    "Executor",
    "LocalExecutor",
    "RayExecutor",
    "RunStats",
    "Task",
    "TaskFailed",
    "call_task",
    "make_executor",
    "reap_node",
]


def make_executor(ray: str | None, workers: int, *, max_retries: int = DEFAULT_RETRIES) -> Executor:
    """``ray=None`` → :class:`LocalExecutor`; ``"auto"`` / ``"ray://host:port"`` / ``"host:port"`` → Ray."""
    if not ray:
        return LocalExecutor(workers, max_retries=max_retries)
    return RayExecutor(ray, workers, max_retries=max_retries)
