"""Same numbers through remote sandboxes: a tiny training run with the effect layer on, twice with the same seeds,
once with local sandboxes and once with ``--sandboxes ray:ADDRESS`` (issue #61, item 6).

The run is ``swe-srl train --reward layered --effect full`` (the effect recomputed, nothing read from the effect
cache) on the bundled suite's default samples, a few GRPO steps with TRL's completion logs on
(``trl.log_completions``). The remote run's driver reaches no container engine (``DOCKER_HOST`` points nowhere);
its sandboxes run on 2 sandbox nodes of a ``ray.cluster_utils.Cluster`` on loopback (2 slots each, as ``swe-srl
worker --sandboxes 2``). Both runs build the same tiny model (same seed) and sample the same completions, so each
logged completion's rewards and layers must be equal, effect included; the script prints how many completions were
compared, how many had an effect value, and any that differ (exit 1 then).

    python bench/remote_effect_training.py [--steps 2] [--warmup-steps 60] [--workdir DIR] [--compare-only]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STORE = 100 * 1024 * 1024
NODE = {"swe_srl_sandbox": 2, "swe_srl_sandbox_node": 1000}
"""What `swe-srl worker --sandboxes 2` declares."""
NOWHERE = "unix:///nonexistent.sock"


def train(output: Path, sandboxes: str, args: argparse.Namespace, env: dict[str, str]) -> float:
    """One run into ``output``; its wall seconds."""
    command = [sys.executable, "-m", "swe_srl.cli", "train", "-o", str(output), "--reward", "layered",
               "--effect", "full", "--max-steps", str(args.steps), "--sandboxes", sandboxes,
               "--set", f"tiny.warmup_steps={args.warmup_steps}", "--set", "trl.num_generations=4",
               "--set", "trl.per_device_train_batch_size=8", "--set", "trl.log_completions=true",
               "--set", "eval.max_samples=0", "--set", f"seed={args.seed}"]  # fmt: skip
    start = time.perf_counter()
    with open(output.with_suffix(".log"), "w") as log:
        subprocess.run(command, check=True, env=env, stdout=log, stderr=subprocess.STDOUT)
    return time.perf_counter() - start


def logged(run: Path) -> list[dict]:
    """Every completion TRL logged, in order: its step, prompt, completion text and numeric columns."""
    import pyarrow.parquet as pq

    rows = []
    for path in sorted((run / "completions").glob("completions_*.parquet")):
        rows += pq.read_table(path).to_pylist()
    return rows


def same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def compare(local: list[dict], remote: list[dict]) -> list[str]:
    """The differences, one line each (none: the runs logged the same completions with the same rewards)."""
    if len(local) != len(remote):
        return [f"{len(local)} completions logged locally, {len(remote)} remotely"]
    lines = []
    for k, (a, b) in enumerate(zip(local, remote, strict=True)):
        keys = sorted((set(a) | set(b)) - {"advantage"})
        diff = [key for key in keys if not same(a.get(key), b.get(key))]
        if diff:
            lines.append(f"completion {k} (step {a.get('step')}): " + ", ".join(
                f"{key} {a.get(key)!r} vs {b.get(key)!r}" for key in diff))  # fmt: skip
    return lines


def wall_s(run: Path) -> float:
    """The run's own wall time (its ``summary.json``)."""
    return float(json.loads((run / "summary.json").read_text()).get("wall_time_s", math.nan))


def effect_column(rows: list[dict]) -> str | None:
    return next((key for row in rows for key in row if key.endswith("/effect")), None)


def run_both(root: Path, args: argparse.Namespace) -> tuple[float, float]:
    """The local run, then the remote one on a fresh loopback cluster of 2 sandbox nodes; their wall seconds."""
    import ray
    from ray.cluster_utils import Cluster

    env = {**os.environ, "SWE_SRL_SANDBOXES": "local"}
    local_s = train(root / "local", "local", args, env)
    head = {"num_cpus": 0, "include_dashboard": False, "object_store_memory": STORE}
    cluster = Cluster(initialize_head=True, head_node_args=head)
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1, resources=NODE, object_store_memory=STORE)
        cluster.wait_for_nodes()
        driver = {**env, "DOCKER_HOST": NOWHERE}  # the learner reaches no engine: every sandbox is on a node
        remote_s = train(root / "remote", f"ray:{cluster.address}", args, driver)
    finally:
        ray.shutdown()
        cluster.shutdown()
    return local_s, remote_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2, help="GRPO steps per run")
    parser.add_argument("--warmup-steps", type=int, default=60, help="the tiny model's format warm-up steps")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--workdir", type=Path, help="where the two runs go (default: a new temporary folder)"
    )
    parser.add_argument(
        "--compare-only", action="store_true", help="compare the two runs already in --workdir (no training)"
    )
    args = parser.parse_args()
    if args.compare_only and not args.workdir:
        parser.error("--compare-only needs --workdir (the folder of an earlier run of this script)")
    root = args.workdir or Path(tempfile.mkdtemp(prefix="swe-srl-bench-remote-training-"))
    root.mkdir(parents=True, exist_ok=True)
    if not args.compare_only:
        run_both(root, args)
    local_s, remote_s = (wall_s(root / name) for name in ("local", "remote"))
    local, remote = logged(root / "local"), logged(root / "remote")
    effect = effect_column(local)
    scored = [row[effect] for row in local if effect and isinstance(row.get(effect), float)]
    scored = [value for value in scored if not math.isnan(value)]
    differences = compare(local, remote)
    print(f"\n{args.steps} GRPO steps, seed {args.seed}, runs in {root} (logs: local.log, remote.log)")
    print(
        f"  wall time of the run: local sandboxes {local_s:.1f} s, remote (2 nodes, no engine here) {remote_s:.1f} s"
    )
    print(f"  completions logged: {len(local)} local, {len(remote)} remote; with an effect value: {len(scored)} "
          f"(distinct values {sorted(set(round(v, 4) for v in scored))})")  # fmt: skip
    print(f"  same per-completion rewards and layers: {'yes' if not differences else 'NO'}")
    for line in differences[:20]:
        print(f"    {line}")
    sys.exit(1 if differences or not local else 0)


if __name__ == "__main__":
    main()
