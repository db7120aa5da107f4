"""Evaluation on the executor backends: the local process pool and a real local Ray cluster (a head without CPUs
and two 1-CPU worker nodes on loopback) give the same report, predictions and trajectories; a Ray worker killed
mid-episode is retried, the instance is reported once and the dead worker's container is reaped."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from chat_stub import serving

from swe_srl.benchmark.instances import Instance, load_instances
from swe_srl.eval.run import evaluate
from swe_srl.eval.settings import EvalSettings

pytestmark = [pytest.mark.docker, pytest.mark.ray]
STORE = 100 * 1024 * 1024
VOLATILE = {"wall_s", "duration_s", "timings"}


@pytest.fixture(scope="module")
def instances(docker_engine, tmp_path_factory: pytest.TempPathFactory) -> list[Instance]:
    from agent_tasks import make_tiny_dataset

    from swe_srl.infra.recipes import instance_image

    loaded = load_instances(str(make_tiny_dataset(tmp_path_factory.mktemp("tiny-tasks"))))
    for instance in loaded:
        instance_image(instance)
    return loaded


@pytest.fixture(scope="module")
def cluster(docker_engine) -> Iterator[str]:
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    head = {"num_cpus": 0, "include_dashboard": False, "object_store_memory": STORE}
    cluster = Cluster(initialize_head=True, head_node_args=head)
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1, object_store_memory=STORE)
        yield cluster.address
    finally:
        ray.shutdown()
        cluster.shutdown()


def _stable(out: Path) -> dict:
    """What must not depend on the backend: report (timings dropped), predictions, results, trajectory actions."""
    report = json.loads((out / "report.json").read_text())
    report.pop("settings")
    results = {}
    for path in sorted((out / "results").glob("*.json")):
        record = json.loads(path.read_text())
        results[path.stem] = {k: v for k, v in record.items() if k not in VOLATILE}
    actions = {
        path.stem: [s["action"] for s in json.loads(path.read_text())["steps"]]
        for path in sorted((out / "trajectories").glob("*.jsonl"))
    }
    return {"report": report, "predictions": (out / "predictions.jsonl").read_text(), "results": results,
            "actions": actions}  # fmt: skip


@pytest.mark.parametrize("policy", ["gold", "empty"])
def test_local_pool_and_ray_give_the_same_report(
    policy: str, instances: list[Instance], cluster: str, tmp_path: Path
) -> None:
    local = evaluate(EvalSettings(policy), instances, tmp_path / "local", workers=2)
    on_ray = evaluate(EvalSettings(policy), instances, tmp_path / "ray", workers=2, ray=cluster)
    assert local["resolved_rate"] == (1.0 if policy == "gold" else 0.0) and local["errors"] == []
    assert on_ray == local
    assert _stable(tmp_path / "ray") == _stable(tmp_path / "local")


def _gold_answers(instances: list[Instance], hold_s: float):
    """A stateless chat answer (a retried episode gets the same answers): the gold edit first, then ``submit``; the
    first request is held ``hold_s`` so a test can kill the worker mid-episode."""
    from swe_srl.agent.policies import gold_script

    scripts = {i.problem_statement: gold_script(i) for i in instances}
    first = threading.Event()

    def answer(request: dict) -> str:
        messages = request["messages"]
        if not first.is_set():
            first.set()
            time.sleep(hold_s)
        script = next(s for p, s in scripts.items() if p in messages[1]["content"])
        return script[min(sum(m["role"] == "assistant" for m in messages), len(script) - 1)]

    return answer


def _kill_first_episode_worker(docker_engine, killed: list[tuple[int, str]]) -> None:
    """SIGKILL the Ray worker process that started the first episode container (found by its pid label)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        # sparse: no inspect of each container, which fails for one removed meanwhile (other runs' too)
        for container in docker_engine.containers.list(
            sparse=True, filters={"label": "swe-srl.owner=swe-srl"}
        ):
            pid = int((container.attrs.get("Labels") or {}).get("swe-srl.pid", "0"))
            if pid != os.getpid() and _is_ray_worker(pid):
                os.kill(pid, signal.SIGKILL)
                killed.append((pid, container.id))
                return
        time.sleep(0.1)


def _is_ray_worker(pid: int) -> bool:
    """A process of this test's Ray cluster (a descendant of this process), not someone else's on the engine."""
    while pid > 1:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        if pid == os.getpid():
            return True
    return False


def test_ray_worker_killed_mid_episode_is_retried_and_counted_once(
    instances: list[Instance], cluster: str, docker_engine, tmp_path: Path
) -> None:
    killed: list[tuple[int, str]] = []
    killer = threading.Thread(target=_kill_first_episode_worker, args=(docker_engine, killed))
    with serving(_gold_answers(instances, hold_s=8.0)) as server:
        killer.start()
        settings = EvalSettings("openai", base_url=server.url, model="gold")
        report = evaluate(settings, instances, tmp_path, workers=2, ray=cluster)
        killer.join()
    assert killed, "no Ray worker started an episode container"
    assert report["resolved_rate"] == 1.0 and report["errors"] == [] and report["total"] == 2
    assert len((tmp_path / "predictions.jsonl").read_text().splitlines()) == 2
    pid, container_id = killed[0]
    assert docker_engine.containers.list(all=True, filters={"id": container_id}) == [], (
        f"container of the killed worker {pid} was not reaped"
    )
