"""Effect-layer throughput, cold (empty result cache): warm sandbox per instance vs a fresh container per evaluation.

Workload (fixed): every step of the bundled test split's scripted-expert trajectories, each with the expert's own
action and three perturbed actions — a no-op (``true``), an edit of the file the fix touches (appending a comment:
a new tree, so at an edit step the target tests run) and a destructive ``rm -f`` of that file. Three passes, each
from an empty result cache (``cached`` mode: a state met twice in one pass is not re-tested):

1. warm box, all cold: the expert's side (its step trees and the test outcomes of its edit states: run, except a
   validated task's base and gold trees, whose outcomes the task defines) computed too;
2. warm box, the expert's side known (stored with the expert states, as ``SandboxEffect.prepare`` leaves it): the
   action results and the action's test runs are all cold;
3. the reference: a fresh container per evaluation (the previous path), expert side known; ``--reference-every N``
   runs it on every N-th evaluation only.

All must give identical values (asserted).

    python bench/effect.py [--trajectories 10] [--reference-every 1]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from swe_srl.benchmark.instances import load_instances
from swe_srl.rewards.effect.evaluator import SandboxEffect
from swe_srl.trajectories.decompose import executed_steps
from swe_srl.trajectories.expert_state import expert_states
from swe_srl.trajectories.schema import Trajectory, read_jsonl
from swe_srl.trajectories.scripted import default_trajectories

PERTURBATIONS = ("true", "echo '# effect bench' >> {file}", "rm -f {file}")


def workload(n_traj: int) -> list[tuple]:
    """(instance, trajectory, step, action) for every step of the first ``n_traj`` bundled test trajectories."""
    instances = {i.instance_id: i for i in load_instances("bundled:test")}
    items = []
    for raw in list(read_jsonl(default_trajectories(split="test")))[:n_traj]:
        traj = Trajectory(raw.instance_id, raw.problem, executed_steps(raw), raw.patch)
        instance = instances[traj.instance_id]
        for k, step in enumerate(traj.steps):
            perturbed = [p.format(file=instance.oracle_files[0]) for p in PERTURBATIONS]
            items += [(instance, traj, k, action) for action in (step.action, *perturbed)]
    return items


def run(effect: SandboxEffect, items: list[tuple]) -> tuple[float, list[float]]:
    start = time.perf_counter()
    try:
        values = [effect.evaluate(inst, traj, k, action).value for inst, traj, k, action in items]
    finally:
        effect.close()
    return time.perf_counter() - start, values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=10)
    parser.add_argument("--reference-every", type=int, default=1)
    args = parser.parse_args()
    items = workload(args.trajectories)
    reference = items[:: args.reference_every]
    for inst, traj, _, _ in items:  # the expert states are replayed once (cached on disk), outside the timing
        expert_states(traj, inst)
    with tempfile.TemporaryDirectory() as tmp:
        dirs = {name: Path(tmp) / name for name in ("expert", "cold", "warm", "per")}
        cold = SandboxEffect("cached", root=dirs["cold"], expert_root=dirs["expert"])
        cold_s, cold_values = run(cold, items)  # nothing cached: the expert's outcomes are computed too
        warm = SandboxEffect("cached", root=dirs["warm"], expert_root=dirs["expert"])
        warm_s, warm_values = run(warm, items)  # the expert's side known (as after SandboxEffect.prepare)
        per = SandboxEffect("cached", root=dirs["per"], expert_root=dirs["expert"], warm=False)
        per_s, per_values = run(per, reference)
    n, m = len(items), len(reference)
    print(f"{n} effect evaluations ({args.trajectories} trajectories, every step x (expert + 3 perturbed))")
    print(f"  warm box, all cold:          {n / cold_s:6.2f} evals/s  ({cold.sandbox_starts} sandboxes, "
          f"{cold.test_runs} test runs)")  # fmt: skip
    print(f"  warm box, expert side known: {n / warm_s:6.2f} evals/s  ({warm.sandbox_starts} sandboxes, "
          f"{warm.test_runs} test runs)")  # fmt: skip
    print(f"  per-container, expert known: {m / per_s:6.2f} evals/s  ({per.sandbox_starts} sandboxes, "
          f"{per.test_runs} test runs, {m} evaluations)")  # fmt: skip
    same = cold_values == warm_values and warm_values[:: args.reference_every] == per_values
    print(f"  speed-up (expert known): {(n / warm_s) / (m / per_s):.1f}x   identical values: {same}")
    print(
        f"  values: mean {sum(warm_values) / n:.3f}, zeros {warm_values.count(0.0)}, ones {warm_values.count(1.0)}"
    )
    assert same, [
        (i, a, b)
        for i, (a, b) in enumerate(zip(cold_values[:: args.reference_every], per_values, strict=True))
        if a != b
    ]


if __name__ == "__main__":
    main()
