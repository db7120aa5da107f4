"""RLVR rollout adapter on a hand-written episode runner; the GPU benchmark's --tiny CPU path runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")

from swe_srl.errors import TrainingError  # noqa: E402
from swe_srl.train.rlvr import OutcomeReward, Rollout, make_rollout_func, outcome_reward  # noqa: E402

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
    """A deterministic policy: each turn is two tokens holding the context length (a batch: one turn each)."""
    return lambda batch: [[len(ids)] * 2 for ids in batch]


def test_rollout_func_builds_trl_batch():
    out = make_rollout_func(TwoTurnRunner(), 4, echo_length)(["solve it", "other"], None)
    assert out["completion_ids"][0] == [3, 3, 9, 9, 7, 7]
    assert out["env_mask"][0] == [1, 1, 0, 0, 1, 1]
    assert outcome_reward([], [], out["outcome_reward"]) == [1.0, 0.0]
    assert out["format_turns"] == [[0, 0], [0, 0]]  # a runner that reports no turns


def test_outcome_reward_keeps_per_turn_format_share():
    """The format metric of RLVR is per model turn: 3 of 4 turns parse over two episodes → 0.75."""
    reward = OutcomeReward()
    assert reward([], [], [1.0, None], format_turns=[[2, 2], [1, 2]]) == [1.0, None]
    assert reward.last_turn_format == 0.75 and reward.__name__ == "outcome_reward"
    reward([], [], [0.0], format_turns=[[0, 0]])
    assert reward.last_turn_format is None


def test_episode_mask_length_checked():
    with pytest.raises(TrainingError, match="env_mask"):
        Rollout([1], [1, 2], [1], 0.0)


@pytest.mark.docker
def test_rlvr_bench_plays_the_same_episodes_one_and_several_at_a_time(tmp_path):
    """bench/rlvr.py on the bundled suite with the tiny model: both settings play every episode; the parallel one
    asks the model once per turn for all live episodes (one batch), the serial one once per episode turn."""
    from swe_srl.errors import DockerUnavailable
    from swe_srl.infra.engine import docker_client

    try:
        docker_client()
    except DockerUnavailable as exc:
        pytest.skip(f"no Docker engine answers: {exc}")
    from swe_srl.core.prompts import build_messages
    from swe_srl.train.config import TinyOptions
    from swe_srl.train.tiny.model import make_tiny_policy

    texts = [m["content"] for m in build_messages("Fix the bug", [("ls", "x.py")])]
    plain = TinyOptions(slots=False)  # RLVR episodes are plain text
    init = make_tiny_policy(texts, tmp_path / "init", plain)  # not the warmed-up default: built in a second
    out = tmp_path / "rlvr.json"
    cmd = [sys.executable, str(ROOT / "bench" / "rlvr.py"), "--n", "2", "--episodes", "2", "--parallel", "2"]
    cmd += [
        "--max-turns",
        "2",
        "--max-new-tokens",
        "4",
        "--repeats",
        "2",
        "--init",
        str(init),
        "--json",
        str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "speedup" in proc.stdout
    serial, parallel = json.loads(out.read_text())["results"]
    assert (serial["parallel"], parallel["parallel"]) == (1, 2)
    assert (
        serial["episodes"] == parallel["episodes"] == 4  # 2 episodes x 2 rounds
        and serial["infra_errors"] == parallel["infra_errors"] == 0
    )
    assert (serial["max_batch"], parallel["max_batch"]) == (1, 2)
    assert serial["generate_calls"] == serial["turns"] and parallel["generate_calls"] < parallel["turns"]
    assert serial["episodes_per_min"] > 0 and len(parallel["rounds_episodes_per_min"]) == 2
