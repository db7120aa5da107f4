"""The local executor: results keyed by task, worker deaths retried and counted once, node-wide start permits."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from swe_srl.errors import ConfigError
from swe_srl.infra.executor import LocalExecutor, Task, TaskFailed, make_executor
from swe_srl.infra.sandbox.start_limit import start_permit

ROOT = Path(__file__).resolve().parents[2]


# Task functions: module level so spawned workers import them by name.
def square(x: int) -> int:
    return x * x


def boom(x: int) -> int:
    raise ValueError(f"bad input {x}")


def marked_sleep(key: str, marker_dir: str, seconds: float) -> str:
    """Leave ``key.pid`` in ``marker_dir`` (one file per attempt), sleep, return the key upper-cased."""
    Path(marker_dir, f"{key}.{os.getpid()}").touch()
    time.sleep(seconds)
    return key.upper()


def hold_permit(seconds: float) -> tuple[float, float]:
    with start_permit(timeout_s=60):
        began = time.monotonic()
        time.sleep(seconds)
        return began, time.monotonic()


def kill_first_attempt(marker_dir: Path, key: str, killed: list[int], timeout_s: float = 60) -> None:
    """Wait until ``key`` runs somewhere, then SIGKILL that worker process (once)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = sorted(marker_dir.glob(f"{key}.*"))
        if found:
            pid = int(found[0].suffix[1:])
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
            return
        time.sleep(0.02)


def max_overlap(intervals: list[tuple[float, float]]) -> int:
    events = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals])
    depth = best = 0
    for _, step in events:
        depth += step
        best = max(best, depth)
    return best


@pytest.mark.parametrize("processes", [True, False])
def test_results_keyed_and_ordered(processes: bool) -> None:
    tasks = [Task(f"t{i}", square, (i,)) for i in (3, 1, 2)]
    seen: list[str] = []
    with LocalExecutor(2, processes=processes) as ex:
        out = ex.map(tasks, on_result=lambda key, value: seen.append(key))
    assert out == {"t3": 9, "t1": 1, "t2": 4}
    assert list(out) == ["t3", "t1", "t2"]  # submission order, whatever the finishing order
    assert sorted(seen) == ["t1", "t2", "t3"]
    assert ex.stats.completed == 3 and ex.stats.retries == 0


def test_duplicate_keys_rejected() -> None:
    with pytest.raises(ConfigError, match="'a' appears more than once"):
        LocalExecutor(1, processes=False).map([Task("a", square, (1,)), Task("a", square, (2,))])


def test_task_exception_is_collected_not_retried() -> None:
    ex = LocalExecutor(2, processes=False)
    with pytest.raises(TaskFailed) as info:
        ex.map([Task("ok", square, (4,)), Task("bad", boom, (7,))])
    assert isinstance(info.value.errors["bad"], ValueError) and "bad input 7" in str(info.value)
    assert info.value.results == {"ok": 16}
    assert ex.stats.retries == 0


def test_killed_worker_is_retried_and_counted_once(tmp_path: Path) -> None:
    keys = ["a", "b", "c", "d"]
    tasks = [Task(k, marked_sleep, (k, str(tmp_path), 1.5 if k == "b" else 0.2)) for k in keys]
    killed: list[int] = []
    killer = threading.Thread(target=kill_first_attempt, args=(tmp_path, "b", killed))
    killer.start()
    with LocalExecutor(2, max_retries=2) as ex:
        out = ex.map(tasks)
    killer.join()
    assert killed, "the killer never saw task b start"
    assert out == {k: k.upper() for k in keys}  # every key once
    assert ex.stats.retries >= 1 and ex.stats.completed == 4
    assert len(list(tmp_path.glob("b.*"))) >= 2  # b ran again ...
    assert ex.stats.worker_of["b"].rsplit(":", 1)[1] != str(killed[0])  # ... in another process


@pytest.mark.parametrize(
    ("limit", "tasks"),
    [
        ("1", 3),  # one permit: starts are serialized across processes
        ("2", 4),  # two permits: never more than two at once
    ],
)
def test_start_permits_cap_across_processes(monkeypatch, tmp_path: Path, limit: str, tasks: int) -> None:
    monkeypatch.setenv("SWE_SRL_HOME", str(tmp_path))  # spawned workers inherit the environment
    monkeypatch.setenv("SWE_SRL_MAX_STARTS", limit)
    with LocalExecutor(tasks) as ex:
        out = ex.map([Task(str(i), hold_permit, (0.4,)) for i in range(tasks)])
    assert max_overlap(list(out.values())) <= int(limit)


@pytest.mark.parametrize("raw", ["0", "-1", "four"])  # not a positive integer
def test_start_permit_rejects_bad_limit(monkeypatch, raw: str) -> None:
    monkeypatch.setenv("SWE_SRL_MAX_STARTS", raw)
    with pytest.raises(ConfigError, match="SWE_SRL_MAX_STARTS"), start_permit():
        pass


@pytest.mark.parametrize(
    ("ray", "workers", "error"),
    [
        (None, 0, "at least one worker"),  # local pool needs a worker
        ("nonsense", 1, "use 'auto'"),  # not an address
    ],
)
def test_make_executor_rejects(ray: str | None, workers: int, error: str) -> None:
    if ray is not None:
        pytest.importorskip("ray")
    with pytest.raises(ConfigError, match=error):
        make_executor(ray, workers)


def test_make_executor_default_is_local() -> None:
    ex = make_executor(None, 3)
    assert isinstance(ex, LocalExecutor) and ex.workers == 3


def test_compose_file_validates() -> None:
    """`docker-compose config` accepts the stack (Debian's docker-compose is installed by swe-srl setup)."""
    binary = shutil.which("docker-compose")
    if binary is None:
        pytest.skip("docker-compose is not installed (swe-srl setup installs it with docker.io)")
    proc = subprocess.run(
        [binary, "-f", str(ROOT / "docker-compose.yml"), "config"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    for service in ("head:", "worker:", "trainer:"):
        assert service in proc.stdout
