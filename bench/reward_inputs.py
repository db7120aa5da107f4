"""Benchmark: what the default run pays before training for the syntax layer's inputs (one action, one reward).

Times, for the bundled suite's scripted-expert trajectories of ``--splits`` (train: ``--expert-seeds`` runs per task):
getting the trajectories (generated and cached on first use), building the samples, and calling the reward's
:class:`~swe_srl.rewards.syntax_inputs.StepInputs` for every sample row (the image's executables and the expert
state of every trajectory: replayed in Docker unless already on disk). It also counts the expert-state files
written during the run, and the sandboxes the inputs phase started (expert-state replays).
Usage: ``SWE_SRL_HOME=/tmp/x python bench/reward_inputs.py [--splits train,dev,test] [--expert-seeds 4]``;
point ``SWE_SRL_HOME`` at a home whose ``expert-state`` is empty to measure the cold case.
"""

from __future__ import annotations

import argparse
import time

from swe_srl.benchmark.instances import load_instances
from swe_srl.paths import cache_dir
from swe_srl.rewards.syntax_inputs import StepInputs
from swe_srl.train.data import read_samples
from swe_srl.train.samples import build_samples
from swe_srl.trajectories import expert_state
from swe_srl.trajectories.scripted import default_trajectories


def _states() -> int:
    return sum(1 for _ in cache_dir("expert-state").glob("*.json"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", default="train,dev,test")
    parser.add_argument("--expert-seeds", type=int, default=4)
    args = parser.parse_args()
    splits = args.splits.split(",")
    states = _states()
    start = time.monotonic()
    sources = [
        str(default_trajectories(split=split, seed=seed))
        for split in splits
        for seed in range(args.expert_seeds if split == "train" else 1)
    ]
    trajectories = time.monotonic()
    sample_set = build_samples(sources, instances=load_instances("bundled"), oracle_files=True)
    samples = time.monotonic()
    rows = read_samples(sample_set.path)
    opened = _count_sandboxes()
    inputs = StepInputs(sample_set.trajectories, sample_set.instances, dataset="bundled")
    for row in rows:
        inputs(row["instance_id"], row["trajectory_hash"], row["step"])
    end = time.monotonic()
    print(f"trajectories: {len(sample_set.trajectories)} ({trajectories - start:.1f} s)")
    print(f"samples: {len(rows)} ({samples - trajectories:.1f} s)")
    print(f"reward inputs: {end - samples:.1f} s, {opened[0]} sandboxes started, fallback: {inputs.fallback}")
    print(f"expert-state files written: {_states() - states}; total {end - start:.1f} s")


def _count_sandboxes() -> list[int]:
    """A counter of the sandboxes the expert-state replays start from now on."""
    count = [0]
    real = expert_state.open_sandbox

    def counted(*args, **kwargs):
        count[0] += 1
        return real(*args, **kwargs)

    expert_state.open_sandbox = counted
    return count


if __name__ == "__main__":
    main()
