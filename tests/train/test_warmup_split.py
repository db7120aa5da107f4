"""``tiny.warmup_share``: the tiny model's warm-up and its training take disjoint train instances."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("trl")

from conftest import TINY, StandInReward  # noqa: E402

from swe_srl.errors import ConfigError  # noqa: E402
from swe_srl.train.config import load_config, start_of  # noqa: E402
from swe_srl.train.data import read_samples, split_rows  # noqa: E402
from swe_srl.train.launch import run_sft  # noqa: E402
from swe_srl.train.run import run_training  # noqa: E402
from swe_srl.train.tiny.start import warmup_split  # noqa: E402

pytestmark = pytest.mark.train

FAST = [*TINY, "tiny.warmup_steps=2", "eval.every=0", "eval.max_samples=2", "trl.save_steps=100"]


def _rows(instances: int, steps: int) -> list[dict]:
    return [
        {"instance_id": f"lib__lib-{i}", "step": k, "expert_action": "ls"}
        for i in range(instances)
        for k in range(steps)
    ]


def test_the_split_keeps_instances_whole_and_is_the_same_every_time() -> None:
    rows = _rows(40, 3)
    warm, rest = warmup_split(load_config(None, ["tiny.warmup_share=0.5"]), rows)
    by_side = ({r["instance_id"] for r in warm}, {r["instance_id"] for r in rest})
    assert by_side[0].isdisjoint(by_side[1]) and len(warm) + len(rest) == len(rows)
    for side in (warm, rest):  # every step of an instance on one side
        assert all(sum(r["instance_id"] == i for r in side) == 3 for i in {r["instance_id"] for r in side})
    assert 10 <= len(by_side[0]) <= 30, by_side  # about half of 40 instances
    again = warmup_split(load_config(None, ["tiny.warmup_share=0.5", "tiny.seed=3", "seed=3"]), rows)
    assert again == (warm, rest)  # seed-independent: every seed's start saw the same instances
    wider = warmup_split(load_config(None, ["tiny.warmup_share=0.8"]), rows)[0]
    assert {r["instance_id"] for r in warm} <= {r["instance_id"] for r in wider}  # a larger share only adds
    assert warmup_split(load_config(None, ["tiny.warmup_share=1"]), rows) == (rows, rows)
    real = load_config(None, ["tiny.warmup_share=0.5"], model="some/model")
    assert start_of(real).warmup_split(real, rows) == (rows, rows)  # a real model has no warm-up: every row
    init = load_config(None, ["tiny.warmup_share=0.5"], init="runs/srl/final")
    assert warmup_split(init, rows) == (rows, rows)  # nor does a given checkpoint


def test_a_share_that_empties_a_side_falls_back_to_every_row_and_bad_shares_are_refused() -> None:
    one = _rows(1, 2)  # a single train instance cannot be split: warm-up and training both get it
    assert warmup_split(load_config(None, []), one) == (one, one)
    assert load_config(None, []).tiny.warmup_share == 0.5  # the tiny default
    for bad in ("0", "1.5"):
        with pytest.raises(ConfigError, match="tiny.warmup_share"):
            load_config(None, [f"tiny.warmup_share={bad}"])


def test_srl_and_sft_train_on_the_instances_the_start_did_not_see(samples_file: Path, tmp_path: Path) -> None:
    train_rows = split_rows(read_samples(samples_file))[0]
    share = ["tiny.warmup_share=0.5"]
    warm, rest = warmup_split(load_config(None, share), train_rows)
    assert warm and rest, "the test samples must fall on both sides"
    srl = load_config(
        None, [*FAST, *share, "trl.max_steps=1"], samples=str(samples_file), output=str(tmp_path / "a")
    )
    summary = run_training(srl, reward_func=StandInReward(), command="srl")
    assert (summary["train_samples"], summary["warmup_samples"]) == (len(rest), len(warm))
    sft = load_config(None, [*FAST, *share, "trl.max_steps=1"], samples=str(samples_file),
                      output=str(tmp_path / "b"), method="sft")  # fmt: skip
    summary = run_sft(sft, command="sft")
    assert (summary["train_samples"], summary["warmup_samples"]) == (len(rest), len(warm))
    saved = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert saved["warmup_samples"] == len(warm)
    card = (tmp_path / "a" / "README.md").read_text()  # the model card says which samples the start saw
    assert f"the tiny model's warm-up saw {len(warm)} of them" in card and f"the other {len(rest)}" in card
    everything = run_training(
        load_config(
            None,
            [*FAST, "tiny.warmup_share=1", "trl.max_steps=1"],
            samples=str(samples_file),
            output=str(tmp_path / "c"),
        ),  # fmt: skip
        reward_func=StandInReward(),
    )
    assert everything["train_samples"] == everything["warmup_samples"] == len(train_rows)
    assert "warm-up saw" not in (tmp_path / "c" / "README.md").read_text()
