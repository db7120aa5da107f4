"""A dataset smaller than one generation batch: TRL's sampler yields nothing from it, so the run would end at step 0
and save its start as trained. SRL refuses such a samples file before any work; RLVR repeats its few instances until
they fill a batch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("trl")

from conftest import make_samples  # noqa: E402

from swe_srl.errors import TrainingError  # noqa: E402
from swe_srl.train.config import load_config  # noqa: E402
from swe_srl.train.data import (  # noqa: E402
    fill_generation_batch,
    prompts_per_generation,
    require_generation_batch,
)
from swe_srl.train.run import run_training  # noqa: E402

pytestmark = pytest.mark.train


def _args(per_device: int, accumulation: int, generations: int):
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir="unused", per_device_train_batch_size=per_device, gradient_accumulation_steps=accumulation,
        num_generations=generations, use_cpu=True, bf16=False, report_to=[],
    )  # fmt: skip


def _sampled_prompts(rows: list[dict], args) -> int:
    """How many prompt indices TRL's own sampler yields over ``rows`` in one epoch, built as GRPOTrainer builds it."""
    from trl.trainer.grpo_trainer import RepeatSampler

    sampler = RepeatSampler(
        data_source=rows, mini_repeat_count=args.num_generations,
        batch_size=args.generation_batch_size // args.num_generations,
        repeat_count=args.num_iterations * args.steps_per_generation, shuffle=True, seed=args.seed,
    )  # fmt: skip
    return len(list(sampler))


def test_a_few_rlvr_instances_fill_whole_generation_batches():
    args = _args(per_device=8, accumulation=4, generations=8)  # the paper preset's shape on one process
    assert prompts_per_generation(args) == 4
    rows = [{"prompt": "a", "instance_id": "a"}, {"prompt": "b", "instance_id": "b"}]
    assert _sampled_prompts(rows, args) == 0  # as it was: TRL draws no batch, the run trains 0 steps
    filled = fill_generation_batch(rows, args)
    assert [r["instance_id"] for r in filled] == ["a", "b", "a", "b"]
    assert _sampled_prompts(filled, args) > 0
    enough = rows * 3
    assert fill_generation_batch(enough, args) == enough


def test_srl_refuses_samples_smaller_than_a_generation_batch_before_any_work(tmp_path: Path):
    args = _args(per_device=8, accumulation=4, generations=8)
    with pytest.raises(TrainingError, match=r"3 training rows, but one generation batch draws 4 prompts"):
        require_generation_batch(3, args, "--samples s.jsonl")
    require_generation_batch(4, args, "--samples s.jsonl")

    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in make_samples(3)), encoding="utf-8")
    sets = [
        "trl.per_device_train_batch_size=64",
        "trl.num_generations=2",
        "trl.gradient_accumulation_steps=1",
    ]
    config = load_config(None, sets, samples=str(samples), output=str(tmp_path / "run"))
    with pytest.raises(TrainingError) as refused:
        run_training(config)
    message = str(refused.value)
    assert "\n" not in message and f"--samples {samples}" in message
    assert "one generation batch draws 32 prompts" in message and "trl.num_generations 2" in message
    assert not (tmp_path / "run" / "tiny-model").exists()  # refused before the tiny model's warm-up
