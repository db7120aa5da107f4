"""One execution interface, two backends: a local worker pool (default) and a Ray cluster (``--ray``).

Effect rewards, expert replays and evaluation episodes are submitted as :class:`Task` s — a plain module-level
function plus picklable arguments, keyed by a unique id (the instance id). ``Executor.map`` returns
``{key: result}`` in submission order, whichever backend ran them::

    with make_executor(ray=None, workers=4) as ex:          # or ray="auto" / "ray://head:10001"
        results = ex.map([Task(i.instance_id, run_one, (i, seed)) for i in instances])

Stopping: an exception out of ``map`` (Ctrl-C, SIGTERM turned into ``SystemExit``) ends the tasks in flight without
waiting for them; their keys stay in ``Executor.in_flight`` so the caller can record them.

Faults: a worker process killed mid-task is retried on another worker (the local pool restarts its processes;
Ray resubmits it, ``max_retries``); each key is delivered exactly once. An exception raised *by the task itself*
is not retried: it is collected and raised as :class:`TaskFailed` after every other task finished. Containers
left by a dead worker carry its pid label, and ``reap_orphans`` (run after every ``map``) removes them on every node.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.progress import Progress

from swe_srl.errors import ConfigError, DockerUnavailable, ExecutorError
from swe_srl.infra.sandbox.janitor import reap

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
        self.in_flight: set[str] = set()
        """Keys of the tasks running now; after ``map`` was stopped (Ctrl-C), those that never finished."""

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
        self.stats, self.in_flight = RunStats(), set()
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


@contextlib.contextmanager
def _progress(show: bool, total: int, name: str) -> Iterator[Callable[[], None]]:
    if not show:
        yield lambda: None
        return
    with Progress(console=Console(stderr=True), transient=False) as bar:
        task = bar.add_task(f"{name}: tasks", total=total)
        yield lambda: bar.advance(task)


def reap_node() -> int:
    """The janitor on this node: containers whose creating process is gone. 0 when Docker is absent."""
    try:
        return len(reap())
    except DockerUnavailable:
        return 0
