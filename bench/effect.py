"""Effect-layer throughput: evaluations/s cold (fresh cache: sandbox + tests) vs cached (disk cache), same run.

Uses the bundled suite's scripted-expert trajectories (built on first use) and, per trajectory, a few actions at a
few steps: the expert's own action (identical tree → 1.0 without tests), a harmless `ls` (same tree as a
read-only expert step) and an edit of the file the fix touches (a new tree: the target tests run). The cold pass runs in ``full`` mode on an empty cache directory; the cached pass repeats the same
evaluations in ``cached`` mode on that directory, where no sandbox or test run should be needed.

    python bench/effect.py [--trajectories 2] [--steps 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from swe_srl.benchmark.instances import load_instances
from swe_srl.rewards.effect_sandbox import SandboxEffect
from swe_srl.trajectories.decompose import executed_steps
from swe_srl.trajectories.schema import read_jsonl
from swe_srl.trajectories.scripted import default_trajectories


def workload(n_traj: int, n_steps: int) -> list[tuple]:
    """(instance, trajectory, step, action) tuples over the first trajectories of the bundled train split."""
    instances = {i.instance_id: i for i in load_instances("bundled:train")}
    items = []
    for traj in list(read_jsonl(default_trajectories(split="train")))[:n_traj]:
        steps = executed_steps(traj)
        for k in range(min(n_steps, len(steps))):
            instance = instances[traj.instance_id]
            edit = f"echo '# effect bench' >> {instance.oracle_files[0]}"
            for action in (steps[k].action, "ls", edit):
                items.append((instance, traj, k, action))
    return items


def run(effect: SandboxEffect, items: list[tuple]) -> tuple[float, list[float]]:
    start = time.perf_counter()
    values = [effect.evaluate(inst, traj, k, action).value for inst, traj, k, action in items]
    return time.perf_counter() - start, values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=2)
    parser.add_argument("--steps", type=int, default=2)
    args = parser.parse_args()
    items = workload(args.trajectories, args.steps)
    with tempfile.TemporaryDirectory() as tmp:
        cold = SandboxEffect("full", root=Path(tmp))
        cold_s, cold_values = run(cold, items)
        warm = SandboxEffect("cached", root=Path(tmp))
        warm_s, warm_values = run(warm, items)
    n = len(items)
    print(f"{n} effect evaluations ({args.trajectories} trajectories x {args.steps} steps x 3 actions)")
    print(
        f"  cold (full):   {n / cold_s:8.2f} evals/s  ({cold.sandbox_starts} sandboxes, {cold.test_runs} test runs)"
    )
    print(
        f"  cached:        {n / warm_s:8.2f} evals/s  ({warm.sandbox_starts} sandboxes, {warm.test_runs} test runs)"
    )
    print(f"  speed-up: {cold_s / warm_s:.0f}x   same values: {cold_values == warm_values}")


if __name__ == "__main__":
    main()
