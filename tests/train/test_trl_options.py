"""TRL options that change training, each checked for its effect on the tiny model: scale_rewards and
multi_objective_aggregation (advantages), report_to (TensorBoard event files), epsilon_high (passed to the loss),
and the batch dynamic sampling builds (only the missing groups are generated)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from conftest import TINY, StandInReward  # noqa: E402

from swe_srl.train.config import load_config  # noqa: E402
from swe_srl.train.data import read_samples, split_rows  # noqa: E402
from swe_srl.train.groups import rloo_advantages  # noqa: E402
from swe_srl.train.run import build_trainer, run_training  # noqa: E402

pytestmark = pytest.mark.train

FAST = [
    *TINY,
    "eval.every=0",
    "eval.max_samples=0",
]


class SpreadReward:
    """0, 1, 0, 1, ... in each group (std > ε), except rows whose instance_id is 'const' (always 0.5)."""

    __name__ = "spread"

    def __call__(self, prompts, completions, instance_id, **columns):
        return [0.5 if iid == "const" else float(i % 2) + 0.25 * (i % 4) for i, iid in enumerate(instance_id)]


def _trainer(samples_file: Path, out: Path, sets: list[str], reward):
    cfg = load_config(None, [*FAST, *sets], samples=str(samples_file), output=str(out))
    train, _ = split_rows(read_samples(samples_file))
    trainer, _ = build_trainer(cfg, train, [], reward)
    trainer.model.train()
    return trainer


def _inputs(trainer, *instance_ids: str) -> list[dict]:
    rows = []
    for i, iid in enumerate(instance_ids):
        row = {**trainer.train_dataset[i], "instance_id": iid}
        rows += [dict(row) for _ in range(trainer.num_generations)]
    return rows


ADVANTAGES = [
    # (trl options, advantages expected from the rewards r of one 2-group batch)
    (["trl.scale_rewards=none"], lambda r: r - r.view(-1, 4).mean(1).repeat_interleave(4)),
    (
        ["trl.scale_rewards=group"],
        lambda r: (
            (r - r.view(-1, 4).mean(1).repeat_interleave(4))
            / (r.view(-1, 4).std(1).repeat_interleave(4) + 1e-4)
        ),
    ),
    (
        ["trl.scale_rewards=batch"],
        lambda r: (r - r.view(-1, 4).mean(1).repeat_interleave(4)) / (r.std() + 1e-4),
    ),
    (
        ["trl.multi_objective_aggregation=normalize_then_sum"],
        lambda r: (lambda n: (n - n.mean()) / (n.std() + 1e-4))(
            (r - r.view(-1, 4).mean(1).repeat_interleave(4))
            / (r.view(-1, 4).std(1).repeat_interleave(4) + 1e-4)
        ),
    ),
    (["advantage=rloo"], lambda r: rloo_advantages(r, 4, "none")),
    (["advantage=rloo", "trl.scale_rewards=group"], lambda r: rloo_advantages(r, 4, "group")),
]


@pytest.mark.parametrize(("sets", "expected"), ADVANTAGES)
def test_advantage_options_act_on_the_batch(samples_file: Path, tmp_path: Path, sets, expected):
    trainer = _trainer(
        samples_file, tmp_path / "a", ["dynamic_sampling.enabled=false", *sets], SpreadReward()
    )
    batch = trainer.train_batch(_inputs(trainer, "a", "b"))
    rewards = trainer._last_rewards
    assert batch["advantages"].tolist() == pytest.approx(expected(rewards).tolist(), rel=1e-4, abs=1e-5)


def test_refill_generates_only_the_missing_groups(samples_file: Path, tmp_path: Path):
    sets = ["dynamic_sampling.max_rounds=3", "loss.sft_weight=0.1"]
    trainer = _trainer(samples_file, tmp_path / "r", sets, SpreadReward())
    batch = trainer.train_batch(_inputs(trainer, "vary", "const"))
    metrics = trainer._metrics["train"]
    # generation round 1 keeps 'vary', drops 'const': one group missing, one generated (not a whole batch)
    assert metrics["dynamic_sampling/rounds"] == [2.0] and metrics["dynamic_sampling/generated_groups"] == [
        3.0
    ]
    assert batch["completion_mask"].shape[0] == 8 and bool(batch["completion_mask"].any(dim=1).all())
    assert batch["sft_row"].tolist() == [True, False, False, False] * 2  # the SFT term: one row per prompt
    assert batch["sft_loss_mask"].sum(dim=1).min() > 0


def test_epsilon_high_reaches_the_clipped_loss(samples_file: Path, tmp_path: Path):
    out = tmp_path / "clip"
    sets = ["trl.epsilon_high=0.28", "trl.num_iterations=2", "trl.max_steps=2", "trl.save_steps=10"]
    trainer = _trainer(samples_file, out, sets, StandInReward())
    assert (trainer.epsilon_low, trainer.epsilon_high) == (0.2, 0.28)
    cfg = load_config(None, [*FAST, *sets], samples=str(samples_file), output=str(out))
    run_training(cfg, reward_func=StandInReward())
    train = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if '"reward"' in x]
    assert all("clip_ratio/high_mean" in r and "clip_ratio/low_mean" in r for r in train)


def test_report_to_tensorboard_writes_event_files(samples_file: Path, tmp_path: Path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = tmp_path / "tb"
    sets = [*FAST, "trl.max_steps=2", "trl.save_steps=10", "trl.report_to=tensorboard"]
    cfg = load_config(None, sets, samples=str(samples_file), output=str(out))
    run_training(cfg, reward_func=StandInReward())
    events = list(out.rglob("events.out.tfevents.*"))
    assert events, "no TensorBoard event file"
    acc = EventAccumulator(str(events[0].parent))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    assert {"train/reward", "train/kl", "train/dynamic_sampling/kept_ratio"} <= tags
    assert [e.step for e in acc.Scalars("train/reward")] == [1, 2]
