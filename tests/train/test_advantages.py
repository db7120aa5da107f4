"""Group filter (dynamic sampling), rloo advantages (with scale_rewards) and SFT targets on hand-made inputs."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from swe_srl.errors import TrainingError  # noqa: E402
from swe_srl.train.groups import first_of_group, group_keep_mask, rloo_advantages  # noqa: E402
from swe_srl.train.trainer import format_ok  # noqa: E402

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
    adv = rloo_advantages(rewards, 4).tolist()
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


def test_rloo_scale_rewards_divides_by_the_group_or_batch_std():
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0])
    plain = rloo_advantages(rewards, 4, "none")
    group_std = math.sqrt((0.75**2 + 3 * 0.25**2) / 3)
    assert rloo_advantages(rewards, 4, "group")[:4].tolist() == pytest.approx(
        (plain[:4] / (group_std + 1e-4)).tolist(), rel=1e-5
    )
    assert rloo_advantages(rewards, 4, "batch").tolist() == pytest.approx(
        (plain / (rewards.std() + 1e-4)).tolist(), rel=1e-5
    )


def test_unknown_scale_is_named():
    with pytest.raises(TrainingError, match="'ppo'"):
        rloo_advantages(torch.zeros(4), 4, "ppo")


def test_first_of_group_marks_one_row_per_prompt():
    assert first_of_group(torch.tensor([0, 0, 1, 1, 0, 7, 1])).tolist() == [1, 0, 1, 0, 0, 1, 0]


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
