"""RLVR rollout adapter on a hand-written episode runner; the GPU benchmark's --tiny CPU path runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")

from swe_srl.errors import TrainingError  # noqa: E402
from swe_srl.train.rlvr import Rollout, make_rollout_func, outcome_reward  # noqa: E402

pytestmark = pytest.mark.train
ROOT = Path(__file__).resolve().parents[2]


class TwoTurnRunner:
    """Model turn, observation, model turn; resolved when the prompt asks for it."""

    def run(self, row, generate):
        prompt = [1, 2, 3]
        first = generate(prompt)
        obs = [9, 9]
        second = generate(prompt + first + obs)
        reward = 1.0 if "solve" in row["prompt"] else 0.0
        return Rollout(prompt, first + obs + second, [1] * len(first) + [0, 0] + [1] * len(second), reward)


def echo_length(trainer, max_new_tokens):
    """A deterministic policy: each turn is two tokens holding the context length."""
    return lambda ids: [len(ids)] * 2


def test_rollout_func_builds_trl_batch():
    out = make_rollout_func(TwoTurnRunner(), 4, echo_length)(["solve it", "other"], None)
    assert out["completion_ids"][0] == [3, 3, 9, 9, 7, 7]
    assert out["env_mask"][0] == [1, 1, 0, 0, 1, 1]
    assert outcome_reward([], [], out["outcome_reward"]) == [1.0, 0.0]


def test_episode_mask_length_checked():
    with pytest.raises(TrainingError, match="env_mask"):
        Rollout([1], [1, 2], [1], 0.0)


def test_bench_tiny_runs_both_trainers(tmp_path):
    """Both trainers train; ours decodes with a static cache, compiled once for all steps (no recompile per step)."""
    out = tmp_path / "bench.json"
    cmd = [sys.executable, str(ROOT / "bench" / "train_gpu.py"), "--tiny", "--steps", "3", "--compile-cpu"]
    proc = subprocess.run([*cmd, "--json", str(out)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert any(line.startswith("plain ") for line in lines) and any(
        line.startswith("ours ") for line in lines
    )
    plain, ours = json.loads(out.read_text())["results"]
    assert (plain["trainer"], plain["steps"], plain["cache_implementation"]) == ("plain", 3, None)
    assert (ours["trainer"], ours["steps"], ours["cache_implementation"], ours["compile"]) == (
        "ours",
        3,
        "static",
        True,
    )
    assert (
        ours["compiled_graphs"] == 1
    )  # one decoding graph for 3 steps: the embedding-hook leak recompiled it per step
    assert ours["mean_completion_len"] == plain["mean_completion_len"]
