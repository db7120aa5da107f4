"""One execution interface, two backends: a local worker pool (default) and a Ray cluster (``--ray``).

Effect rewards, expert replays and evaluation episodes are submitted as :class:`Task` s — a plain module-level
function plus picklable arguments, keyed by a unique id (the instance id). ``Executor.map`` returns
``{key: result}`` in submission order, whichever backend ran them::

    with make_executor(ray=None, workers=4) as ex:          # or ray="auto" / "ray://head:10001"
        results = ex.map([Task(i.instance_id, run_one, (i, seed)) for i in instances])

Faults: a worker process killed mid-task is retried on another worker (the local pool restarts its processes;
Ray resubmits it, ``max_retries``); each key is delivered exactly once. An exception raised *by the task itself*
is not retried: it is collected and raised as :class:`TaskFailed` after every other task finished. Containers
left by a dead worker carry its pid label, and ``reap_orphans`` (run after every ``map``) removes them on every node.

Back-pressure: :func:`start_slot` caps concurrent container starts per Docker engine with ``flock`` on N slot
files in ``$SWE_SRL_HOME/locks/starts`` — node-wide, across the processes of both backends and free on a crash
(the kernel drops a dead process's locks). See docs/scale-out.md.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from swe_srl import paths
from swe_srl.errors import ConfigError, ExecutorError, SandboxError

MAX_STARTS_ENV = "SWE_SRL_MAX_STARTS"
DEFAULT_MAX_STARTS = 4
DEFAULT_RETRIES = 3
OnResult = Callable[[str, Any], None]


@dataclass(frozen=True)
class Task:
    """``fn(*args, **kwargs)`` keyed by ``key`` (unique within one ``map``); ``fn`` must be module-level."""

    key: str
    fn: Callable[..., Any]
    args: tuple = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)


class TaskFailed(ExecutorError):
    """Tasks raised; ``errors`` maps their keys to the exceptions, ``results`` holds the tasks that succeeded."""

    def __init__(self, errors: dict[str, BaseException], results: dict[str, Any]) -> None:
        self.errors, self.results = errors, results
        first, exc = next(iter(errors.items()))
        super().__init__(f"{len(errors)} task(s) failed; first {first!r}: {type(exc).__name__}: {exc}")


@dataclass
class RunStats:
    """What one ``map`` did: per-key worker (``host:pid``) and the retries after worker deaths (local pool)."""

    completed: int = 0
    retries: int = 0
    duplicates_dropped: int = 0
    worker_of: dict[str, str] = field(default_factory=dict)


def call_task(fn: Callable[..., Any], args: tuple, kwargs: Mapping[str, Any]) -> tuple[Any, str]:
    """Run one task in a worker; returns (value, ``host:pid`` of the worker)."""
    return fn(*args, **kwargs), f"{socket.gethostname()}:{os.getpid()}"


class Executor:
    """Runs tasks on some workers; subclasses implement ``_run`` (submit, wait, deliver, retry)."""

    name = "executor"

    def __init__(self, workers: int, *, max_retries: int = DEFAULT_RETRIES) -> None:
        if workers < 1:
            raise ConfigError(f"workers={workers}: need at least one worker")
        self.workers, self.max_retries = workers, max_retries
        self.stats = RunStats()

    def map(
        self,
        tasks: Sequence[Task],
        *,
        on_result: OnResult | None = None,
        progress: bool = False,
        reap: bool = True,
    ) -> dict[str, Any]:
        """Run every task once; ``on_result(key, value)`` is called in this thread as each one ends.

        With ``reap`` the janitor runs on every node at the end (containers of workers that died).
        """
        keys = [task.key for task in tasks]
        if len(set(keys)) != len(keys):
            dup = next(k for k in keys if keys.count(k) > 1)
            raise ConfigError(f"task key {dup!r} appears more than once; keys must be unique (instance ids)")
        self.stats = RunStats()
        results: dict[str, Any] = {}
        errors: dict[str, BaseException] = {}
        with _progress(progress, len(tasks), self.name) as advance:

            def deliver(key: str, value: Any, worker: str) -> None:
                if key in results or key in errors:  # a late duplicate: counted once
                    self.stats.duplicates_dropped += 1
                    return
                results[key], self.stats.worker_of[key] = value, worker
                self.stats.completed += 1
                advance()
                if on_result is not None:
                    on_result(key, value)

            def fail(key: str, exc: BaseException) -> None:
                errors.setdefault(key, exc)
                advance()

            self._run(list(tasks), deliver, fail)
        if reap:
            self.reap_orphans()
        ordered = {k: results[k] for k in keys if k in results}
        if errors:
            raise TaskFailed(errors, ordered)
        return ordered

    def _run(self, tasks: list[Task], deliver: Callable, fail: Callable) -> None:
        raise NotImplementedError

    def reap_orphans(self) -> int:
        """Remove containers of dead swe-srl processes on this host; 0 when no engine answers."""
        return reap_node()

    def close(self) -> None:
        """Release the workers (idempotent)."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def reap_node() -> int:
    """The janitor on this node: containers whose creating process is gone. 0 when Docker is absent."""
    try:
        from swe_srl.errors import DockerUnavailable
        from swe_srl.sandbox.janitor import reap
    except ImportError:
        return 0
    try:
        return len(reap())
    except DockerUnavailable:
        return 0


@contextlib.contextmanager
def _progress(show: bool, total: int, name: str) -> Iterator[Callable[[], None]]:
    if not show:
        yield lambda: None
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=False) as bar:
        task = bar.add_task(f"{name}: tasks", total=total)
        yield lambda: bar.advance(task)


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
        from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
        from multiprocessing import get_context

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
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

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


@contextlib.contextmanager
def start_slot(timeout_s: float = 900.0) -> Iterator[int]:
    """Hold one of ``$SWE_SRL_MAX_STARTS`` (default 4) container-start slots of this node; yields the slot index."""
    raw = os.environ.get(MAX_STARTS_ENV, str(DEFAULT_MAX_STARTS))
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(
            f"{MAX_STARTS_ENV}={raw!r}: must be a positive integer (concurrent container starts)"
        )
    slots_dir = paths.cache_dir("locks") / "starts"
    slots_dir.mkdir(parents=True, exist_ok=True)
    deadline, pause = time.monotonic() + timeout_s, 0.01
    while True:
        for index in range(int(raw)):
            handle = open(slots_dir / f"slot-{index}.lock", "a")  # noqa: SIM115 - held across the yield
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            try:
                yield index
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
                handle.close()
            return
        if time.monotonic() > deadline:
            raise SandboxError(
                f"no container start slot free in {timeout_s:.0f}s ({raw} slots under {slots_dir}); "
                f"raise {MAX_STARTS_ENV} or check for a stuck Docker daemon"
            )
        time.sleep(pause)
        pause = min(pause * 2, 0.2)


def make_executor(ray: str | None, workers: int, *, max_retries: int = DEFAULT_RETRIES) -> Executor:
    """``ray=None`` → :class:`LocalExecutor`; ``"auto"`` / ``"ray://host:port"`` / ``"host:port"`` → Ray."""
    if not ray:
        return LocalExecutor(workers, max_retries=max_retries)
    from swe_srl.executor_ray import RayExecutor

    return RayExecutor(ray, workers, max_retries=max_retries)
