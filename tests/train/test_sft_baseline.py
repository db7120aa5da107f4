"""``--method sft`` (the supervised baseline) and ``--seeds N`` through the real pipeline on the tiny model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("trl")

from conftest import TINY, StandInReward  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from swe_srl.cli.app import app  # noqa: E402
from swe_srl.errors import ConfigError, TrainingError  # noqa: E402
from swe_srl.train.config import load_config  # noqa: E402
from swe_srl.train.launch import run_sft  # noqa: E402
from swe_srl.train.run import run_training  # noqa: E402
from swe_srl.train.tiny.preset import TINY_TRL_DEFAULTS  # noqa: E402

pytestmark = pytest.mark.train

FAST = [*TINY, "tiny.warmup_steps=0", "eval.every=0", "eval.max_samples=2", "trl.save_steps=100"]


def _ids(out: Path) -> list[str]:
    return [json.loads(line)["id"] for line in (out / "heldout.jsonl").read_text().splitlines()]


def test_sft_loss_falls_and_the_heldout_report_matches_srl(samples_file: Path, tmp_path: Path) -> None:
    sft_out, srl_out = tmp_path / "sft", tmp_path / "srl"
    cfg = load_config(None, [*FAST, "trl.max_steps=12"], samples=str(samples_file), output=str(sft_out),
                      method="sft")  # fmt: skip
    summary = run_sft(cfg, command="sft-1")
    records = [json.loads(line) for line in (sft_out / "metrics.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in records]
    assert [r["step"] for r in records] == list(range(1, 13)) and summary["steps"] == 12
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3, losses  # the SFT loss on the training targets falls
    assert summary["method"] == "sft" and summary["prompts_per_step"] == 2  # 8 completions / 4 generations
    lr = TINY_TRL_DEFAULTS["learning_rate"]
    assert records[0]["learning_rate"] == lr and records[-1]["learning_rate"] < lr  # SRL's lr and schedule
    assert (sft_out / "final" / "config.json").is_file() and (sft_out / "final" / "tokenizer.json").is_file()
    saved = json.loads((sft_out / "summary.json").read_text())
    assert saved["heldout"]["samples"] == 5 and {"final", "initial", "frequent_at_step"} <= set(
        saved["heldout"]["means"]
    )
    assert "`--method sft`: the supervised baseline" in (sft_out / "final" / "README.md").read_text()
    cfg = load_config(None, [*FAST, "trl.max_steps=1"], samples=str(samples_file), output=str(srl_out))
    run_training(cfg, reward_func=StandInReward(), command="srl-1")
    assert _ids(sft_out) == _ids(srl_out) and len(_ids(sft_out)) == 5  # compared on the same test samples
    with pytest.raises(TrainingError, match="method sft"):
        run_training(load_config(None, FAST, samples=str(samples_file), method="sft"))
    with pytest.raises(ConfigError, match="no --resume"):
        load_config(None, FAST, samples=str(samples_file), method="sft", resume=True)


def test_seeds_write_one_dir_each_and_an_aggregate(samples_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "seeds"
    sets = [x for o in [*FAST, "trl.max_steps=2"] for x in ("--set", o)]
    args = ["train", "--samples", str(samples_file), "--method", "sft", "--seeds", "2", "-o", str(out), *sets]
    result = CliRunner().invoke(app, args)  # the CLI, in-process
    assert result.exit_code == 0, result.output
    assert "2 seeds of --method sft" in result.output and "seeds.json" in result.output
    for k in (0, 1):
        assert (out / f"seed-{k}" / "summary.json").is_file() and (
            out / f"seed-{k}" / "heldout.jsonl"
        ).is_file()
    saved = json.loads((out / "seeds.json").read_text())
    assert (
        saved["method"] == "sft" and saved["seeds"] == [0, 1] and [r["seed"] for r in saved["runs"]] == [0, 1]
    )
    for name in ("final", "initial", "frequent_at_step"):
        for reward in ("srl", "layered"):
            values = [r["means"][name][reward] for r in saved["runs"]]
            cell = saved["over_seeds"][name][reward]
            assert cell["mean"] == pytest.approx(sum(values) / 2)
            assert cell["std"] == pytest.approx(abs(values[0] - values[1]) / 2**0.5)
    for run in saved["runs"]:  # each seed's per-step split, as in its own summary.json
        summary = json.loads((out / f"seed-{run['seed']}" / "summary.json").read_text())
        assert run["by_step"] and run["by_step"] == summary["heldout"]["by_step"]
    # seeds change the starting model (tiny init seed) and so its greedy outputs
    starts = [(out / f"seed-{k}" / "tiny-model" / "model.safetensors").read_bytes() for k in (0, 1)]
    assert starts[0] != starts[1]
