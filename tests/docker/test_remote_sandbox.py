"""Remote sandboxes on a real Ray cluster on loopback whose driver has no container engine.

The head (no CPUs, no sandbox slots) and the driver see ``DOCKER_HOST=unix:///nonexistent.sock``; two sandbox nodes
(``swe_srl_sandbox: 2`` each) were started with the real engine. Through them: an SWEEnv episode on a bundled
instance (graded on submit), the gold and empty patches' verdicts, a GRPO batch's effect rewards equal to those
computed with local sandboxes on a node, a node killed mid-episode (an infrastructure error; the next episode runs
on the other node), RLVR's episode runner (gold → 1.0, a bare submit → 0.0, a lost node → None), and a driver killed with its sandbox open (its container is removed). No container is left on
any node."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.ray]
STORE = 100 * 1024 * 1024
NOWHERE = "unix:///nonexistent.sock"
INSTANCE = "tabulate__tabulate-m001"
REAL_HOST = os.environ.get("DOCKER_HOST")
"""The engine the sandbox nodes use (the driver's is replaced by :data:`NOWHERE`)."""
FAST_FAILURE = {"health_check_period_ms": 500, "health_check_failure_threshold": 3}
"""A killed node is declared dead in about 2 s instead of 15 s."""


def _clear_engine_caches() -> None:
    from swe_srl.infra import engine

    for cached in (engine.engine_name, engine._cached_client, engine.engine_cpus, engine.libpod_info):
        cached.cache_clear()


def _add_sandbox_node(cluster) -> None:
    """A node with 2 sandbox slots, its processes started with the real engine (whatever this process sees)."""
    driver_host = os.environ.get("DOCKER_HOST")
    _set_host(REAL_HOST)
    try:
        resources = {"swe_srl_sandbox": 2, "swe_srl_sandbox_node": 1000}  # as `swe-srl worker --sandboxes 2`
        cluster.add_node(num_cpus=1, resources=resources, object_store_memory=STORE)
    finally:
        _set_host(driver_host)


def _set_host(value: str | None) -> None:
    if value is None:
        os.environ.pop("DOCKER_HOST", None)
    else:
        os.environ["DOCKER_HOST"] = value


@pytest.fixture(scope="module")
def instance(docker_engine):
    from swe_srl.benchmark.instances import load_instances

    return {i.instance_id: i for i in load_instances("bundled:test")}[INSTANCE]


@pytest.fixture(scope="module")
def fix_steps(docker_engine):
    """Two train trajectories of different instances and their fix steps (computed with the real engine, before
    the driver loses it)."""
    from swe_srl.benchmark.instances import load_instances
    from swe_srl.trajectories.expert_state import expert_states
    from swe_srl.trajectories.schema import read_jsonl
    from swe_srl.trajectories.scripted import default_trajectories

    instances = {i.instance_id: i for i in load_instances("bundled:train")}
    picked = {}
    for traj in read_jsonl(default_trajectories(split="train")):
        if traj.instance_id not in picked and len(picked) < 2:
            state = expert_states(traj, instances[traj.instance_id])
            picked[traj.instance_id] = (traj, instances[traj.instance_id], state.diffs.index(state.diffs[-1]))
    return list(picked.values())


@pytest.fixture(scope="module")
def cluster(docker_engine, instance, fix_steps):
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    head = {
        "num_cpus": 0,
        "include_dashboard": False,
        "object_store_memory": STORE,
        "_system_config": FAST_FAILURE,
    }
    cluster = Cluster(initialize_head=True, head_node_args=head)
    saved = os.environ.get("SWE_SRL_SANDBOXES")
    try:
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # _local_effects runs on a node
        for _ in range(2):
            _add_sandbox_node(cluster)
        os.environ["DOCKER_HOST"] = NOWHERE  # from here on, this process (the driver) reaches no engine
        os.environ["SWE_SRL_SANDBOXES"] = f"ray:{cluster.address}"
        _clear_engine_caches()
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
        _set_host(REAL_HOST)
        if saved is None:
            os.environ.pop("SWE_SRL_SANDBOXES", None)
        else:
            os.environ["SWE_SRL_SANDBOXES"] = saved
        _clear_engine_caches()


def _engine(*args: str) -> str:
    """The real engine's CLI (this process's DOCKER_HOST points nowhere)."""
    env = {k: v for k, v in os.environ.items() if k != "DOCKER_HOST"} | (
        {"DOCKER_HOST": REAL_HOST} if REAL_HOST else {}
    )
    return subprocess.run(["docker", *args], capture_output=True, text=True, env=env, check=True).stdout


def _gone(container_id: str, within_s: float = 60.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if container_id not in _engine("ps", "-aq", "--no-trunc"):
            return True
        time.sleep(0.5)
    return False


def _ended(pid: int, within_s: float = 30.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


def test_the_driver_has_no_engine(cluster) -> None:
    from swe_srl.errors import DockerUnavailable
    from swe_srl.infra.engine import docker_client

    with pytest.raises(DockerUnavailable):
        docker_client()


def test_episode_through_a_sandbox_node(cluster, instance) -> None:
    """The gold script in SWEEnv: every command and the grading on submit run on the sandbox nodes."""
    from swe_srl.agent.episode import AgentConfig
    from swe_srl.agent.loop import run_episode
    from swe_srl.agent.policies import ScriptedPolicy, gold_patch_outputs
    from swe_srl.env.swe_env import SWEEnv
    from swe_srl.infra.sandbox.remote import RemoteSandbox

    env = SWEEnv(dataset="bundled:test")
    seen = []
    config = AgentConfig(max_steps=None, episode_timeout_s=None, submit_to_env=True)
    policy = ScriptedPolicy(gold_patch_outputs(instance.patch), name="gold")
    result = run_episode(env, policy, instance, config, on_step=lambda *_: seen.append(env.sandbox))
    assert result.error is None and result.terminated
    assert isinstance(seen[0], RemoteSandbox) and seen[0].node
    assert result.total_reward == 1.0  # resolved: graded on a sandbox node
    assert "tabulate" in result.steps[0].observation  # `ls` of the repository


def test_gold_and_empty_patches_grade_as_locally(cluster, instance) -> None:
    from swe_srl.grading.runner import grade

    gold, empty = grade(instance, instance.patch), grade(instance, "")
    assert (gold.status, empty.status) == ("resolved", "unresolved"), (gold.log[-500:], empty.log[-500:])
    assert gold.image["image"].startswith("swe-srl/instance:")


def _batch_rewards(fix_steps, root: str) -> tuple[list[float], list[dict], str | None]:
    """A GRPO batch's layered rewards with the effect layer (2 instances scored in parallel, 2 completions each),
    placed as ``$SWE_SRL_SANDBOXES`` says: run here (remote) and on a sandbox node (local there)."""
    from pathlib import Path

    from swe_srl.core.actions import format_output
    from swe_srl.rewards.effect.evaluator import SandboxEffect
    from swe_srl.rewards.trl import SRLReward

    trajs = [traj for traj, _, _ in fix_steps]
    effect = SandboxEffect(
        "full",
        trajectories=trajs,
        dataset="bundled:train",
        root=Path(root) / "a",
        expert_root=Path(root) / "e",
    )
    reward = SRLReward(mode="layered", effect_mode="full", effect=effect)
    rows = [(traj, k, action) for traj, instance, k in fix_steps
            for action in (traj.steps[k].action, f"echo '# not the fix' >> {instance.oracle_files[0]}")]  # fmt: skip
    try:
        totals = reward(
            prompts=[""] * len(rows),
            completions=[format_output("try", action) for _, _, action in rows],
            expert_action=[traj.steps[k].action for traj, k, _ in rows],
            instance_id=[traj.instance_id for traj, _, _ in rows],
            trajectory_hash=[traj.content_hash() for traj, _, _ in rows],
            step=[k for _, k, _ in rows],
        )
    finally:
        for evaluator in [effect, *reward._evaluators.values()]:
            evaluator.close()
    return totals, reward.last_components, reward.syntax_fallback


def test_effect_rewards_of_a_batch_equal_local_ones(cluster, fix_steps, tmp_path) -> None:
    from swe_srl.infra.sandbox.remote import call_on_sandbox_node

    remote = _batch_rewards(fix_steps, str(tmp_path / "remote"))
    local = call_on_sandbox_node(_batch_rewards, fix_steps, str(tmp_path / "local"))
    assert remote == local
    totals, components, fallback = remote
    assert (
        fallback is None
    )  # the syntax layer read the image's executables (through a node), not the defaults
    assert [c["effect"] for c in components][0::2] == [1.0, 1.0]  # the expert's own action at each fix step
    assert all(0.0 < c["effect"] < 0.5 for c in components[1::2]) and totals[0] > totals[1]


def test_node_lost_mid_episode_is_an_infra_error(cluster, instance) -> None:
    from swe_srl.agent.episode import AgentConfig
    from swe_srl.agent.loop import run_episode
    from swe_srl.agent.policies import ScriptedPolicy
    from swe_srl.core.actions import format_output
    from swe_srl.env.swe_env import SWEEnv

    env = SWEEnv(dataset="bundled:test")
    killed: list[str] = []

    def kill_its_node(episode, record) -> None:
        if killed:
            return
        killed.append(env.sandbox.container_id)
        node = next(n for n in cluster.worker_nodes if n.node_id == env.sandbox.node_id)
        cluster.remove_node(node, allow_graceful=False)
        assert _ended(env.sandbox.pid)  # the node's worker processes end with its raylet (in 2-3 s)

    steps = [format_output("look", "ls"), format_output("again", "ls"), format_output("done", "submit")]
    config = AgentConfig(max_steps=None, episode_timeout_s=None, submit_to_env=True)
    result = run_episode(env, ScriptedPolicy(steps, name="s"), instance, config, on_step=kill_its_node)
    assert result.exit_reason == "infra_error" and "gone" in (result.error or ""), result
    assert _gone(killed[0])  # its container went with the node's processes
    _add_sandbox_node(cluster)  # the run goes on: the next episode on the nodes left
    again = run_episode(env, ScriptedPolicy(steps, name="s"), instance, config)
    assert again.error is None and again.terminated


def test_rlvr_rollouts_through_sandbox_nodes(cluster, instance) -> None:
    """RLVR's episode runner from this driver (no engine): two episodes in lock-step, the gold script resolves
    (reward 1.0) and a bare submit does not (0.0); then an episode whose node is killed before its second turn ends
    with reward None (no gradient), and its container goes with the node."""
    from swe_srl.agent.policies import gold_script
    from swe_srl.core.actions import SUBMIT, THINK_OPEN, format_output
    from swe_srl.train.policy import think_prefix
    from swe_srl.train.rlvr import EnvEpisodeRunner
    from swe_srl.train.tiny.model import build_tokenizer

    tok = build_tokenizer([instance.patch, instance.problem_statement], vocab_size=300)
    prefix = think_prefix(tok)
    assert prefix == THINK_OPEN

    def ids(text: str) -> list[int]:  # the turn as the model writes it after the prompt's opening <think>
        return tok(text.removeprefix(prefix), add_special_tokens=False)["input_ids"] + [tok.eos_token_id]

    gold, bare = gold_script(instance), [format_output("Nothing to change.", SUBMIT)]
    calls: list[int] = []

    def scripted(batch):  # turn t: gold's t-th output for the first live episode, then a bare submit
        calls.append(len(batch))
        return [ids((gold if k == 0 else bare)[len(calls) - 1]) for k in range(len(batch))]

    runner = EnvEpisodeRunner(tok, [instance], max_turns=4, think_prefix=prefix, parallel=2)
    killed: list[str] = []

    def kill_its_node(batch):
        calls.append(len(batch))
        if len(calls) == 2:  # before the second turn: the first one's command ran on the node
            box = runner.envs[0].sandbox
            killed.append(box.container_id)
            node = next(n for n in cluster.worker_nodes if n.node_id == box.node_id)
            cluster.remove_node(node, allow_graceful=False)
            assert _ended(box.pid)
        return [ids(format_output("look", "ls"))]

    try:
        resolved, unresolved = runner.run_batch([{"instance_id": INSTANCE}] * 2, scripted)
        assert calls == [2, 1] and (resolved.reward, unresolved.reward) == (1.0, 0.0)
        assert resolved.info["grade_status"] == "resolved" and sum(resolved.env_mask) > 0
        calls.clear()
        (lost,) = runner.run_batch([{"instance_id": INSTANCE}], kill_its_node)
    finally:
        runner.close()
    assert lost.reward is None and "gone" in lost.info["error"], lost.info
    assert _gone(killed[0])
    _add_sandbox_node(cluster)  # back to two nodes for the tests after this one


def test_a_start_queued_for_a_slot_ends_when_closed(cluster, instance) -> None:
    """Every slot held: the next start waits; closing it meanwhile (as Ctrl-C's close_all does) ends the wait at
    once, and its actor never takes a slot."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from swe_srl.errors import SandboxError
    from swe_srl.infra.sandbox.factory import open_sandbox
    from swe_srl.infra.sandbox.placement import SANDBOX_RESOURCE
    from swe_srl.infra.sandbox.remote import connected_ray

    ray = connected_ray(cluster.address)
    free = 2 * len(cluster.worker_nodes)  # all free once the earlier tests' closes land (~1 s)
    deadline = time.monotonic() + 30
    while ray.available_resources().get(SANDBOX_RESOURCE, 0) != free and time.monotonic() < deadline:
        time.sleep(0.2)
    held = [open_sandbox(instance, profile="episode") for _ in range(free)]
    queued, outcome = open_sandbox(instance, profile="episode"), []

    def start() -> None:
        try:
            queued.start()
            outcome.append("started")
        except SandboxError as exc:
            outcome.append(exc)

    try:
        with ThreadPoolExecutor(max(free, 1)) as pool:
            list(pool.map(lambda box: box.start(), held))
        waiting = threading.Thread(target=start)
        waiting.start()
        time.sleep(2)
        assert free >= 1 and not outcome  # queued
        closed = time.monotonic()
        queued.close()
        waiting.join(timeout=30)
        assert time.monotonic() - closed < 10 and isinstance(outcome[0], SandboxError), outcome
        assert queued.container_id is None
    finally:
        for box in held:
            box.close()


DRIVER = """
import sys
from swe_srl.benchmark.instances import load_instances
from swe_srl.infra.sandbox.factory import open_sandbox
instance = {i.instance_id: i for i in load_instances("bundled:test")}[sys.argv[1]]
box = open_sandbox(instance, profile="episode").start()
print(box.container_id, flush=True)
sys.stdin.read()
"""


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT])
def test_dead_driver_leaves_no_container(cluster, how) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}  # DOCKER_HOST nowhere, SWE_SRL_SANDBOXES=ray:<cluster>
    proc = subprocess.Popen([sys.executable, "-c", DRIVER, INSTANCE], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        container = proc.stdout.readline().strip()
        assert container and container in _engine("ps", "-q", "--no-trunc")
        proc.send_signal(how)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _gone(container)


def test_no_container_left_on_any_node(cluster) -> None:
    from swe_srl.infra.sandbox.janitor import RUN_ID

    labels = [json.loads(line) for line in _engine("ps", "-a", "--format", "{{json .Labels}}").splitlines()]
    assert not [label for label in labels if f"swe-srl.run-id={RUN_ID}" in label]
