"""Group filter (dynamic sampling) and advantages on hand-made reward tensors."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from swe_srl.errors import TrainingError  # noqa: E402
from swe_srl.train.trainer import compute_advantages, format_ok, group_keep_mask  # noqa: E402

pytestmark = pytest.mark.train
NAN = float("nan")

KEEP_CASES = [
    # (rewards of 3 groups × 4, epsilon, expected keep per group)
    ([1, 1, 1, 1, 0, 1, 0, 1, -1, -1, -1, -1], 0.1, [False, True, False]),  # constant groups dropped
    ([0.5, 0.55, 0.5, 0.55, 0, 0, 0, 0.9, 0.2, 0.2, 0.2, 0.2], 0.1, [False, True, False]),  # std 0.029 ≤ ε
    (
        [0.5, 0.55, 0.5, 0.55, 0, 0, 0, 0.9, 0.2, 0.2, 0.2, 0.2],
        0.0,
        [True, True, False],
    ),  # ε=0 keeps any spread
    ([1, NAN, NAN, NAN, 1, 0, NAN, NAN, NAN, NAN, NAN, NAN], 0.1, [False, True, False]),  # <2 scored → drop
    ([1, 1, NAN, 1, -1, 1, NAN, NAN, 0, 0, 0, 1], 0.1, [False, True, True]),  # NaN ignored in the std
]


@pytest.mark.parametrize(("rewards", "eps", "expected"), KEEP_CASES)
def test_group_keep_mask_drops_exactly_zero_variance_groups(rewards, eps, expected):
    keep = group_keep_mask(torch.tensor(rewards, dtype=torch.float32), 4, eps)
    assert keep.tolist() == expected


def test_rloo_matches_hand_computed_leave_one_out():
    rewards = torch.tensor([1.0, 0.0, 0.5, NAN, 2.0, 2.0, 2.0, 2.0, 1.0, 0.0, 0.0, 0.0])
    adv = compute_advantages(rewards, 4, "rloo").tolist()
    expected = [
        1 - (0 + 0.5) / 2,
        0 - (1 + 0.5) / 2,
        0.5 - (1 + 0) / 2,
        0.0,  # NaN: no advantage, not in baseline
        0.0,
        0.0,
        0.0,
        0.0,  # constant group
        1 - 0 / 3,
        0 - 1 / 3,
        0 - 1 / 3,
        0 - 1 / 3,
    ]
    assert adv == pytest.approx(expected, abs=1e-6)


def test_grpo_is_group_mean_over_std():
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.0])
    mean, std = 0.25, math.sqrt((0.75**2 + 3 * 0.25**2) / 3)
    expected = [(r - mean) / (std + 1e-4) for r in rewards.tolist()]
    assert compute_advantages(rewards, 4, "grpo").tolist() == pytest.approx(expected, rel=1e-5)


def test_unknown_advantage_is_named():
    with pytest.raises(TrainingError, match="'ppo'"):
        compute_advantages(torch.zeros(4), 4, "ppo")


FORMAT_CASES = [
    # (completion, template prefix, well-formed?)
    ("<think>look</think>\nls src", "", True),  # full turn
    ("look</think>\nls src", "<think>", True),  # template already opened <think>
    ("look</think>\nls src", "", False),  # missing <think>
    ([{"role": "assistant", "content": "x</think>grep -rn a ."}], "<think>", True),  # conversational
    ("<think>x</think>", "", False),  # empty action
]


@pytest.mark.parametrize(("completion", "prefix", "ok"), FORMAT_CASES)
def test_format_ok(completion, prefix, ok):
    assert format_ok(completion, prefix) is ok
