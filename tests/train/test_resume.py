"""--resume restores the dynamic-sampling refill generator: a run stopped at step 2 and resumed to step 3 draws the
same refill prompts as a run that went to step 3 at once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from conftest import TINY, ConstantReward  # noqa: E402

from swe_srl.train.config import load_config  # noqa: E402
from swe_srl.train.run import run_training  # noqa: E402

pytestmark = pytest.mark.train

FAST = [
    *TINY,
    "trl.save_steps=1",
    "eval.max_samples=0",
    "dynamic_sampling.max_rounds=2",  # a constant reward drops every group: one refill of 2 prompts per step
]


def _run(samples_file: Path, out: Path, steps: int, resume: bool = False) -> None:
    cfg = load_config(
        None, [*FAST, f"trl.max_steps={steps}"], samples=str(samples_file), output=str(out), resume=resume
    )
    run_training(cfg, reward_func=ConstantReward())


def _state(out: Path, step: int) -> dict:
    return json.loads((out / f"checkpoint-{step}" / "refill_state-0.json").read_text())


def test_resume_restores_the_refill_generator(samples_file: Path, tmp_path: Path):
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    _run(samples_file, straight, 3)
    _run(samples_file, resumed, 2)
    assert _state(resumed, 2) == _state(straight, 2)
    _run(samples_file, resumed, 3, resume=True)
    assert _state(resumed, 3) == _state(straight, 3)
    assert (
        len(_state(straight, 3)["order"]) == len(_state(straight, 1)["order"]) - 4
    )  # 2 prompts drawn a step
