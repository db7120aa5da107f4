"""Two SweSrl-v0 environments driven in parallel by EnvPool do not see each other's files; lock-step episodes."""

from __future__ import annotations

import threading

import docker
import gymnasium
import pytest

from swe_srl.agent.envpool import EnvPool
from swe_srl.agent.policies import EmptyPolicy, GoldPolicy
from swe_srl.benchmark.instances import Instance
from swe_srl.core.actions import format_output

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def instance(docker_engine) -> Instance:
    """The bundled task with the smallest gold patch, its image built once."""
    from swe_srl.benchmark.instances import load_instances
    from swe_srl.infra.recipes import instance_image

    picked = sorted(load_instances("bundled"), key=lambda i: len(i.patch))[0]
    instance_image(picked)
    return picked


def test_parallel_envs_do_not_interfere(instance: Instance) -> None:
    both_wrote = threading.Barrier(2, timeout=120)

    def episode(env: gymnasium.Env, tag: str) -> tuple[str, str, str]:
        env.reset(options={"instance_id": instance.instance_id})
        container_id = env.unwrapped.sandbox.container_id
        env.step(format_output("mark my sandbox", f"echo {tag} > only_{tag}.txt && cd /tmp"))
        both_wrote.wait()  # the other env has written its file by now
        obs, *_ = env.step(format_output("look", "ls /testbed/only_*.txt; pwd"))
        return container_id, obs, threading.current_thread().name

    with EnvPool(2, warm=1, instances=[instance]) as pool:  # a shared warm pool too
        results = pool.map(episode, ["alpha", "beta"])
        container_ids = [cid for cid, _, _ in results]
    (_, obs_a, thread_a), (_, obs_b, thread_b) = results
    assert thread_a != thread_b, "the two episodes ran concurrently"
    assert "only_alpha.txt" in obs_a and "only_beta.txt" not in obs_a
    assert "only_beta.txt" in obs_b and "only_alpha.txt" not in obs_b
    assert "/tmp" in obs_a and "/tmp" in obs_b
    assert len(set(container_ids)) == 2
    client = docker.from_env()
    for container_id in container_ids:  # the pool's close() removed both containers
        with pytest.raises(docker.errors.NotFound):
            client.containers.get(container_id)


def test_pool_runs_episodes_in_lockstep_waves(instance: Instance) -> None:
    """Three episodes on two envs: a wave of two in lock-step, then one; each policy keeps its own script."""
    from swe_srl.core.patches import patch_paths

    iid = instance.instance_id
    with EnvPool(2, instances=[instance]) as pool:
        results = pool.run_episodes([GoldPolicy(), EmptyPolicy(), GoldPolicy()], [iid, iid, instance])
        assert all(env.unwrapped.sandbox is None for env in pool.envs)  # each episode removed its container
    assert [(r.exit_reason, r.calls) for r in results] == [
        ("submitted", 2),
        ("submitted", 1),
        ("submitted", 2),
    ]
    assert results[0].patch == results[2].patch and results[1].patch == ""
    assert patch_paths(results[0].patch) == patch_paths(instance.patch)
