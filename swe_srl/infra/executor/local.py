"""The embedded backend: a local worker pool (processes, or threads), with retries after worker deaths."""

from __future__ import annotations

import os
import time
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, ThreadPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from typing import Any

from swe_srl.errors import ExecutorError
from swe_srl.infra.executor.base import DEFAULT_RETRIES, Executor, Task, call_task
from swe_srl.infra.executor.lifeline import worker_init
from swe_srl.infra.sandbox import janitor

STOP_GRACE_S = 20.0
"""Seconds stopped workers get to close their sandboxes before they are killed."""


class LocalExecutor(Executor):
    """The embedded backend: ``workers`` processes (spawned) on this machine, or threads with ``processes=False``.

    A killed worker process breaks the pool: the pool is rebuilt and the unfinished tasks are resubmitted (at most
    ``max_retries`` times each). At most ``workers`` tasks are in flight, so every resubmitted task was running.

    Stopping (Ctrl-C or SIGTERM in the driver, any exception out of ``map``) does not wait for the tasks in flight:
    queued tasks are cancelled, worker processes get SIGTERM (their sandboxes are closed) and SIGKILL after
    :data:`STOP_GRACE_S`; task threads have their sandboxes closed and cannot start new ones. Workers also die
    with the driver (``lifeline.worker_init``), even when it is SIGKILLed.
    """

    name = "local"

    def __init__(
        self, workers: int = 1, *, processes: bool = True, max_retries: int = DEFAULT_RETRIES
    ) -> None:
        super().__init__(workers, max_retries=max_retries)
        self.processes = processes
        self._threads = f"swe-srl-task-{uuid.uuid4().hex[:8]}"
        """Name prefix of this executor's task threads (its sandboxes are closed when it stops)."""

    def _pool(self):

        if not self.processes:
            return ThreadPoolExecutor(self.workers, thread_name_prefix=self._threads)
        return ProcessPoolExecutor(
            self.workers,
            mp_context=get_context("spawn"),
            initializer=worker_init,
            initargs=(os.getpid(), janitor.RUN_ID),
        )

    def _run(self, tasks: list[Task], deliver: Callable, fail: Callable) -> None:
        pending, attempts = deque(tasks), dict.fromkeys((t.key for t in tasks), 0)
        while pending:
            pool = self._pool()
            try:
                crashed = self._drain(pool, pending, attempts, deliver, fail)
            except BaseException:
                self._stop(pool)
                raise
            pool.shutdown(wait=True)
            if crashed:
                self.reap_orphans()

    def _stop(self, pool) -> None:
        """End the tasks in flight now (see the class doc); the keys stay in ``in_flight``."""
        if not self.processes:
            janitor.stop_threads(self._threads)
            pool.shutdown(wait=False, cancel_futures=True)
            return
        workers = [p for p in (getattr(pool, "_processes", None) or {}).values() if p.is_alive()]
        for process in workers:
            process.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        deadline = time.monotonic() + STOP_GRACE_S
        for process in workers:
            process.join(max(deadline - time.monotonic(), 0.1))
            if process.is_alive():
                process.kill()
                process.join(5)

    def _drain(self, pool, pending: deque[Task], attempts: dict, deliver: Callable, fail: Callable) -> bool:
        """Run tasks on ``pool`` until done or the pool breaks; True when a worker died."""

        inflight: dict[Any, Task] = {}
        broken = False
        while inflight or (pending and not broken):
            while pending and not broken and len(inflight) < self.workers:
                task = pending.popleft()
                inflight[pool.submit(call_task, task.fn, task.args, dict(task.kwargs))] = task
                self.in_flight.add(task.key)
            finished, _ = wait(inflight, return_when=FIRST_COMPLETED)
            for future in finished:
                task = inflight.pop(future)
                self.in_flight.discard(task.key)
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
