"""Scale-out benchmark: episodes/minute on the bundled suite, local pool vs Ray with 1 and 2 worker nodes.

Each backend runs the same episodes (``--policy gold``: apply the gold patch through the shell, submit) and the
same no-op tasks; printed side by side with the per-task overhead Ray adds over the local pool, and whether the
patches are identical. The Ray cluster is real (``ray.cluster_utils.Cluster``: a head without CPUs and N 1-CPU
worker nodes on loopback), started here and stopped at the end.

    python bench/scale.py [--dataset bundled] [--n 4] [--noops 40] [--policy gold]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

from swe_srl.infra.executor import Executor, LocalExecutor, Task

STORE = 100 * 1024 * 1024


def noop(i: int) -> int:
    return i


def episode(instance, policy_spec: str) -> dict:
    """One agent episode on ``instance`` in a fresh SWEEnv on this node; the patch and why it stopped."""
    from swe_srl.agent.loop import run_episode
    from swe_srl.agent.policies import make_policy
    from swe_srl.env.swe_env import SWEEnv

    result = run_episode(SWEEnv(instances=[instance]), make_policy(policy_spec), instance)
    return {"patch": result.patch, "exit_reason": result.exit_reason, "steps": result.calls}


@dataclass
class Row:
    name: str
    episodes_per_min: float
    task_overhead_ms: float
    results: dict


def measure(name: str, ex: Executor, instances: list, policy: str, noops: int) -> Row:
    ex.map(
        [Task(f"warm{i}", noop, (i,)) for i in range(ex.workers)], reap=False
    )  # workers up and importing before the clock starts
    start = time.perf_counter()
    ex.map([Task(str(i), noop, (i,)) for i in range(noops)], reap=False)
    per_task = (time.perf_counter() - start) / max(noops, 1)
    results, rate = {}, 0.0
    if instances:
        start = time.perf_counter()
        results = ex.map([Task(i.instance_id, episode, (i, policy)) for i in instances], progress=True)
        rate = len(instances) / (time.perf_counter() - start) * 60
    return Row(name, rate, per_task * 1000, results)


def ray_rows(instances: list, policy: str, noops: int) -> list[Row]:
    import ray
    from ray.cluster_utils import Cluster

    from swe_srl.infra.executor.ray_backend import RayExecutor

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 0, "include_dashboard": False, "object_store_memory": STORE},
    )
    rows = []
    try:
        for nodes in (1, 2):
            cluster.add_node(num_cpus=1, object_store_memory=STORE)
            cluster.wait_for_nodes()
            with RayExecutor(cluster.address, workers=nodes) as ex:
                rows.append(measure(f"ray, {nodes} worker node(s)", ex, instances, policy, noops))
    finally:
        ray.shutdown()
        cluster.shutdown()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="bundled")
    parser.add_argument("--n", type=int, default=4, help="episodes per backend (0: overhead only)")
    parser.add_argument("--noops", type=int, default=40, help="no-op tasks measuring the per-task overhead")
    parser.add_argument("--policy", default="gold")
    args = parser.parse_args()
    instances = []
    if args.n:
        from swe_srl.benchmark.instances import load_instances

        instances = load_instances(args.dataset)[: args.n]
    rows = []
    for workers in (1, 2):
        with LocalExecutor(workers) as ex:
            rows.append(measure(f"local pool, {workers} process(es)", ex, instances, args.policy, args.noops))
    rows += ray_rows(instances, args.policy, args.noops)
    base = rows[0]
    print(f"\n{len(instances)} episodes ({args.policy}) and {args.noops} no-op tasks per backend")
    print(f"  {'backend':<30} {'episodes/min':>12} {'ms/no-op task':>14} {'vs local':>10}  same results")
    for row in rows:
        extra = row.task_overhead_ms - base.task_overhead_ms
        same = "yes" if row.results == base.results else "NO"
        print(
            f"  {row.name:<30} {row.episodes_per_min:>12.1f} {row.task_overhead_ms:>11.1f} ms"
            f" {extra:>+8.1f} ms  {same}"
        )


if __name__ == "__main__":
    main()
