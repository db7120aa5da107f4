"""Trivial baselines and paired bootstrap intervals for held-out step samples."""

from __future__ import annotations

import random

import pytest

from swe_srl.core.actions import parse_output
from swe_srl.eval.baselines import BASELINES, baseline_actions, baseline_outputs, compare, paired_bootstrap
from swe_srl.rewards import score_output


def _rows(traj: str, actions: list[str], split: str) -> list[dict]:
    return [
        {"trajectory_hash": traj, "step": k, "expert_action": a, "split": split}
        for k, a in enumerate(actions)
    ]


def test_baseline_actions_follow_their_definitions() -> None:
    train = _rows("a", ["ls", "cat x.py", "pytest"], "train") + _rows("b", ["find .", "cat x.py"], "train")
    train += _rows("c", ["find .", "grep -n f x.py"], "train")
    test = _rows("t", ["ls", "grep -rn foo", "sed -i s/a/b/ x.py", "pytest", "submit"], "test")
    got = baseline_actions(train, test)
    assert set(got) == set(BASELINES) and all(len(v) == 5 for v in got.values())
    assert got["always_ls"] == ["ls"] * 5 and got["always_submit"] == ["submit"] * 5
    assert got["always_git_diff"] == ["git diff"] * 5
    assert got["copy_previous"] == ["ls", "ls", "grep -rn foo", "sed -i s/a/b/ x.py", "pytest"]
    # step 0: "find ." twice vs "ls" once; step 1: "cat x.py" twice; step 2: only "pytest"; steps 3, 4: none
    # at that index in training, so the most frequent training action overall ("cat x.py" and "find ." tie at 2:
    # the lexicographically first wins)
    assert got["frequent_at_step"] == ["find .", "cat x.py", "pytest", "cat x.py", "cat x.py"]


def test_baseline_outputs_are_well_formed_and_score_their_action() -> None:
    (output,) = baseline_outputs(["grep -rn foo src"])
    assert parse_output(output).action == "grep -rn foo src"
    assert score_output(output, "grep -rn foo src").total == pytest.approx(1.0)


def test_paired_bootstrap_interval_covers_the_mean_and_detects_a_gain() -> None:
    rng = random.Random(1)
    base = [rng.random() for _ in range(200)]
    better = [b + 0.1 + rng.gauss(0, 0.05) for b in base]
    result = paired_bootstrap(better, base)
    assert result["low"] < result["mean_diff"] < result["high"]
    assert result["low"] > 0.08 and result["high"] < 0.12
    same = paired_bootstrap(base, [b + rng.gauss(0, 0.05) for b in base])
    assert same["low"] < 0 < same["high"]  # no real difference: the interval straddles 0
    table = compare(better, {"base": base, "itself": better})
    assert table["base"]["beats"] is True and table["itself"]["beats"] is False
    with pytest.raises(ValueError, match="equally long"):
        paired_bootstrap([1.0], [])
