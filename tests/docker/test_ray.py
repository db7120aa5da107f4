"""The Ray backend on a real local cluster: a head (no CPUs) and two 1-CPU worker nodes on loopback.

The same tasks give the same results on the local pool and on Ray; a worker process killed mid-task is retried
elsewhere and its result delivered once; the container it left behind is reaped on its node.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from swe_srl.infra.executor import LocalExecutor, Task

pytestmark = [pytest.mark.docker, pytest.mark.ray]
STORE = 100 * 1024 * 1024


# Task functions (shipped to Ray workers by value, see the cluster fixture).
def word_stats(text: str, seed: int) -> dict:
    import random

    time.sleep(0.5)  # long enough that the second worker takes tasks even on a loaded machine
    rng = random.Random(seed)
    return {"words": len(text.split()), "draw": rng.randint(0, 10**6)}


def sandbox_run(image: str, command: str) -> tuple[str, int]:
    """Start a sandbox on this node's engine, run ``command``, return (output, exit code)."""
    from swe_srl.infra.sandbox.base import SandboxSpec
    from swe_srl.infra.sandbox.docker import DockerSandbox

    with DockerSandbox(SandboxSpec(image=image)) as box:
        result = box.run(command)
    return result.output, result.exit_code


def env_value(name: str) -> str | None:
    return os.environ.get(name)


def slow_marked(key: str, marker_dir: str, seconds: float) -> str:
    Path(marker_dir, f"{key}.{os.getpid()}").touch()
    time.sleep(seconds)
    return key.upper()


def container_then_hang(key: str, image: str, marker_dir: str) -> str:
    """First attempt: start a container, record it, hang (to be killed). A retry returns at once."""
    from swe_srl.infra.sandbox.base import SandboxSpec
    from swe_srl.infra.sandbox.docker import DockerSandbox

    if list(Path(marker_dir).glob(f"{key}.*")):
        return "retried"
    box = DockerSandbox(SandboxSpec(image=image)).start()
    Path(marker_dir, f"{key}.{os.getpid()}").write_text(box.container_id or "")
    time.sleep(120)
    box.close()
    return "not killed"


@pytest.fixture(scope="module")
def ray_executor(docker_engine):
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    from swe_srl.infra.executor.ray_backend import RayExecutor

    head = {"num_cpus": 0, "include_dashboard": False, "object_store_memory": STORE}
    cluster = Cluster(initialize_head=True, head_node_args=head)
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1, object_store_memory=STORE)
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
        executor = RayExecutor(cluster.address, workers=0)
        yield executor
        executor.close()
    finally:
        ray.shutdown()
        cluster.shutdown()


def _kill_when_started(marker_dir: Path, key: str, killed: list[int]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not killed:
        found = sorted(marker_dir.glob(f"{key}.*"))
        if found:
            pid = int(found[0].suffix[1:])
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        time.sleep(0.05)


def test_cluster_has_two_workers(ray_executor) -> None:
    assert ray_executor.workers == 2  # the head has no CPUs: tasks run on the two worker nodes


def test_pure_tasks_same_results_local_and_ray(ray_executor) -> None:
    tasks = [Task(f"t{i}", word_stats, ("a b c " * i, i)) for i in range(6)]
    with LocalExecutor(2) as local:
        expected = local.map(tasks)
    assert ray_executor.map(tasks) == expected
    assert len(set(ray_executor.stats.worker_of.values())) >= 2  # spread over worker processes


def test_sandbox_tasks_same_results_local_and_ray(ray_executor, tiny_image: str) -> None:
    commands = {"cat": "cat calc.py", "py": "python -c 'print(6 * 7)'", "fail": "ls /nope"}
    tasks = [Task(key, sandbox_run, (tiny_image, cmd)) for key, cmd in commands.items()]
    with LocalExecutor(2) as local:
        expected = local.map(tasks)
    assert expected["py"] == ("42\n", 0) and expected["fail"][1] != 0
    assert ray_executor.map(tasks) == expected


def test_image_source_travels_to_the_workers(ray_executor, monkeypatch) -> None:
    # the nodes started before it was set (as a remote cluster's would): the task's runtime_env brings it
    monkeypatch.setenv("SWE_SRL_IMAGE_SOURCE", "debootstrap")
    results = dict(ray_executor.map([Task(key="env", fn=env_value, args=("SWE_SRL_IMAGE_SOURCE",))]))
    assert results == {"env": "debootstrap"}


def test_killed_ray_worker_retried_once(ray_executor, tmp_path: Path) -> None:
    keys = ["a", "b", "c", "d"]
    tasks = [Task(k, slow_marked, (k, str(tmp_path), 3.0 if k == "b" else 0.3)) for k in keys]
    killed: list[int] = []
    killer = threading.Thread(target=_kill_when_started, args=(tmp_path, "b", killed))
    killer.start()
    results: list[str] = []
    out = ray_executor.map(tasks, on_result=lambda key, value: results.append(key))
    killer.join()
    assert killed, "task b never started"
    assert out == {k: k.upper() for k in keys}
    assert sorted(results) == keys  # each key delivered exactly once
    assert len(list(tmp_path.glob("b.*"))) == 2  # the killed attempt and its retry
    assert ray_executor.stats.worker_of["b"].rsplit(":", 1)[1] != str(killed[0])


def test_dead_workers_container_is_reaped(
    ray_executor, tiny_image: str, docker_engine, tmp_path: Path
) -> None:
    killed: list[int] = []
    killer = threading.Thread(target=_kill_when_started, args=(tmp_path, "x", killed))
    killer.start()
    out = ray_executor.map([Task("x", container_then_hang, ("x", tiny_image, str(tmp_path)))])
    killer.join()
    assert out == {"x": "retried"}
    container_id = next(tmp_path.glob("x.*")).read_text()
    assert container_id
    left = docker_engine.containers.list(all=True, filters={"id": container_id})
    assert left == [], f"container {container_id[:12]} of the killed worker was not reaped"
