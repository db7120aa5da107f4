"""Remote sandboxes through Ray, measured side by side in one run on a loopback cluster.

1. ``env.step`` of a trivial action (``true``): a local sandbox, a remote one (a Ray actor on a sandbox node of a
   ``ray.cluster_utils.Cluster`` on loopback), and ``docker exec`` into the local episode's container (the cost of a
   fresh process per command). Target: remote ≤ 5 ms p50, so still ≥ 20× faster than ``docker exec``.
2. Effect evaluations per second with 1 and 2 sandbox nodes of one slot each (one evaluator thread per slot, each
   with its warm effect box; distinct edits at the fix step of a bundled train trajectory, so each runs the target
   tests), and the same work on the local engine with one thread. Target: 2 nodes ≥ 1.6× 1 node. On a 2-core
   machine a node is one slot whose sandbox gets one core, so the ratio measures the overhead, not the cores.
3. The RLVR rollout rate of the tiny model (``bench/rlvr.py``'s policy and episodes: ``--rlvr`` episodes, 2 in
   parallel) with local sandboxes and with the 2 sandbox nodes; 0 skips it.

    python bench/remote_sandboxes.py [--steps 200] [--evals 8] [--rlvr 4] [--rlvr-init CHECKPOINT]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

STORE = 100 * 1024 * 1024
INSTANCE = "tabulate__tabulate-m001"
SLOT = {"swe_srl_sandbox": 1, "swe_srl_sandbox_node": 1000}
"""What `swe-srl worker --sandboxes 1` declares."""


def step_times(n: int, exec_calls: int = 0) -> tuple[list[float], list[float]]:
    """Seconds of ``n`` env.step calls of ``true`` in a fresh SWEEnv episode (placed as $SWE_SRL_SANDBOXES says),
    and of ``exec_calls`` ``docker exec … true`` into its container (a local sandbox)."""
    from swe_srl.core.actions import format_output
    from swe_srl.env.swe_env import SWEEnv

    env = SWEEnv(dataset="bundled:test")
    env.reset(options={"instance_id": INSTANCE})
    action = format_output("nothing", "true")
    env.step(action)  # warm
    times = []
    for _ in range(n):
        start = time.perf_counter()
        env.step(action)
        times.append(time.perf_counter() - start)
    exec_times = _docker_exec_times(env.sandbox.container_id, exec_calls) if exec_calls else []
    env.close()
    return times, exec_times


def _docker_exec_times(container: str, n: int) -> list[float]:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run(["docker", "exec", container, "true"], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return times


def fix_step():
    from swe_srl.benchmark.instances import load_instances
    from swe_srl.trajectories.expert_state import expert_states
    from swe_srl.trajectories.schema import read_jsonl
    from swe_srl.trajectories.scripted import default_trajectories

    traj = next(iter(read_jsonl(default_trajectories(split="train"))))
    instance = {i.instance_id: i for i in load_instances("bundled:train")}[traj.instance_id]
    state = expert_states(traj, instance)
    return traj, instance, state.diffs.index(state.diffs[-1])


def effect_rate(threads: int, evals: int, root: Path, tag: str) -> tuple[float, list[float]]:
    """Effect evaluations per second: ``evals`` distinct edits (the same in every configuration; each its own cache
    folder ``tag``) over ``threads`` evaluators, each warmed up first with an untimed evaluation (its box started,
    the expert step cached)."""
    from swe_srl.rewards.effect.evaluator import SandboxEffect

    traj, instance, k = fix_step()
    path = instance.oracle_files[0]
    evaluators = [
        SandboxEffect("cached", root=root / f"{tag}-{t}", expert_root=root / "expert") for t in range(threads)
    ]
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda e: e.evaluate(instance, traj, k, f"echo '# warm-up' >> {path}"), evaluators))
        edits = [f"echo '# edit {i}' >> {path}" for i in range(evals)]
        share = [edits[t::threads] for t in range(threads)]
        start = time.perf_counter()
        values = list(pool.map(lambda t: [evaluators[t].evaluate(instance, traj, k, a).value for a in share[t]],
                               range(threads)))  # fmt: skip
        elapsed = time.perf_counter() - start
    for e in evaluators:
        e.close()
    return evals / elapsed, [v for vs in values for v in vs]


def rlvr_rate(episodes: int, model) -> dict:
    """bench/rlvr.py's measure: ``episodes`` tiny-model episodes, 2 in parallel, sandboxes placed as
    ``$SWE_SRL_SANDBOXES`` says."""
    sys.path.insert(0, str(Path(__file__).parent))
    import rlvr

    from swe_srl.benchmark.instances import load_instances

    instances = [i for i in load_instances("bundled") if i.split == "train"][:2]
    ids = [instances[k % len(instances)].instance_id for k in range(episodes)]
    settings = argparse.Namespace(max_turns=3, max_new_tokens=48)
    return rlvr.measure(2, ids, instances, *model, settings)


def tiny_policy(workdir: Path, init: str | None):
    """The checkpoint ``init``, else the tiny default model (its format warm-up: minutes), as bench/rlvr.py plays."""
    sys.path.insert(0, str(Path(__file__).parent))
    import rlvr

    return rlvr.policy(init, workdir)


def p50_ms(times: list[float]) -> float:
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="env.step calls per placement")
    parser.add_argument("--evals", type=int, default=8, help="effect evaluations per configuration")
    parser.add_argument("--rlvr", type=int, default=4, help="RLVR episodes per placement (0: skip)")
    parser.add_argument(
        "--rlvr-init", help="a checkpoint to play in the RLVR episodes (default: the tiny model)"
    )
    args = parser.parse_args()
    import ray
    from ray.cluster_utils import Cluster

    os.environ["SWE_SRL_SANDBOXES"] = "local"
    local_steps, exec_steps = step_times(args.steps, exec_calls=max(args.steps // 10, 10))
    root = Path(tempfile.mkdtemp(prefix="swe-srl-bench-remote-"))
    fix_step()  # the expert states, before any clock
    local_rate, local_values = effect_rate(1, args.evals, root, "local")
    model = tiny_policy(root / "policy", args.rlvr_init) if args.rlvr else None
    rollouts = {"local": rlvr_rate(args.rlvr, model)} if args.rlvr else {}
    head = {"num_cpus": 0, "include_dashboard": False, "object_store_memory": STORE}
    cluster = Cluster(initialize_head=True, head_node_args=head)
    try:
        rates = {}
        for nodes in (1, 2):
            cluster.add_node(num_cpus=1, resources=SLOT, object_store_memory=STORE)
            cluster.wait_for_nodes()
            os.environ["SWE_SRL_SANDBOXES"] = f"ray:{cluster.address}"
            if nodes == 1:
                remote_steps, _ = step_times(args.steps)
            rates[nodes] = effect_rate(nodes, args.evals, root, f"remote{nodes}")
        if args.rlvr:
            rollouts["remote, 2 sandbox nodes"] = rlvr_rate(args.rlvr, model)
    finally:
        ray.shutdown()
        cluster.shutdown()
        os.environ["SWE_SRL_SANDBOXES"] = "local"
    print(f"\nenv.step of `true`, p50 over {args.steps} steps (docker exec: {len(exec_steps)} calls)")
    print(f"  local sandbox          {p50_ms(local_steps):8.2f} ms")
    remote = p50_ms(remote_steps)
    print(f"  remote sandbox (Ray)   {remote:8.2f} ms   target <= 5 ms: {'met' if remote <= 5 else 'MISSED'}")
    speedup = p50_ms(exec_steps) / remote
    print(
        f"  docker exec            {p50_ms(exec_steps):8.2f} ms   remote is {speedup:.0f}x faster (target >= 20x)"
    )
    print(f"\neffect evaluations per second ({args.evals} distinct edits each)")
    print(f"  local engine, 1 thread       {local_rate:6.2f}/s")
    for nodes, (rate, _) in rates.items():
        print(f"  Ray, {nodes} sandbox node(s)       {rate:6.2f}/s")
    ratio = rates[2][0] / rates[1][0]
    print(f"  2 nodes / 1 node: {ratio:.2f}x (target >= 1.6x: {'met' if ratio >= 1.6 else 'MISSED'})")
    same = sorted(local_values) == sorted(rates[1][1]) == sorted(rates[2][1])
    print(f"  same values local and remote: {'yes' if same else 'NO'}")
    if rollouts:
        print(f"\nRLVR rollouts of the tiny model ({args.rlvr} episodes, 2 in parallel, 3 turns)")
        for name, row in rollouts.items():
            print(f"  {name:<26} {row['episodes_per_min']:6.2f} episodes/min  (wall {row['wall_s']:.1f} s, "
                  f"infra errors {row['infra_errors']})")  # fmt: skip
    sys.exit(0)


if __name__ == "__main__":
    main()
