"""The embedded backend: a local worker pool (processes, or threads), with retries after worker deaths."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, ThreadPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from typing import Any

from swe_srl.errors import ExecutorError
from swe_srl.infra.executor.base import DEFAULT_RETRIES, Executor, Task, call_task


class LocalExecutor(Executor):
    """The embedded backend: ``workers`` processes (spawned) on this machine, or threads with ``processes=False``.

    A killed worker process breaks the pool: the pool is rebuilt and the unfinished tasks are resubmitted (at most
    ``max_retries`` times each). At most ``workers`` tasks are in flight, so every resubmitted task was running.
    """

    name = "local"

    def __init__(
        self, workers: int = 1, *, processes: bool = True, max_retries: int = DEFAULT_RETRIES
    ) -> None:
        super().__init__(workers, max_retries=max_retries)
        self.processes = processes

    def _pool(self):

        if not self.processes:
            return ThreadPoolExecutor(self.workers, thread_name_prefix="swe-srl-task")
        return ProcessPoolExecutor(self.workers, mp_context=get_context("spawn"))

    def _run(self, tasks: list[Task], deliver: Callable, fail: Callable) -> None:
        pending, attempts = deque(tasks), dict.fromkeys((t.key for t in tasks), 0)
        while pending:
            with self._pool() as pool:
                crashed = self._drain(pool, pending, attempts, deliver, fail)
            if crashed:
                self.reap_orphans()

    def _drain(self, pool, pending: deque[Task], attempts: dict, deliver: Callable, fail: Callable) -> bool:
        """Run tasks on ``pool`` until done or the pool breaks; True when a worker died."""

        inflight: dict[Any, Task] = {}
        broken = False
        while inflight or (pending and not broken):
            while pending and not broken and len(inflight) < self.workers:
                task = pending.popleft()
                inflight[pool.submit(call_task, task.fn, task.args, dict(task.kwargs))] = task
            finished, _ = wait(inflight, return_when=FIRST_COMPLETED)
            for future in finished:
                task = inflight.pop(future)
                try:
                    value, worker = future.result()
                except BrokenProcessPool:
                    broken = True
                    attempts[task.key] += 1
                    if attempts[task.key] > self.max_retries:
                        fail(
                            task.key,
                            ExecutorError(f"task {task.key!r}: its worker died {attempts[task.key]} times"),
                        )
                    else:
                        self.stats.retries += 1
                        pending.appendleft(task)
                except Exception as exc:  # the task's own error: not retried
                    fail(task.key, exc)
                else:
                    deliver(task.key, value, worker)
        return broken
