"""The end of `swe-srl train`: the result lines and one last line naming the output folder and what it holds."""

from __future__ import annotations

from pathlib import Path

from swe_srl.cli.train import OUTPUTS, outputs_line, seeds_table, verdict_lines


def test_the_last_line_names_the_folder_and_the_files_written(tmp_path: Path) -> None:
    assert outputs_line(tmp_path, OUTPUTS) == f"outputs: {tmp_path}"
    for name in ("summary.json", "training_curves.png", "final/README.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    assert outputs_line(tmp_path, OUTPUTS) == (
        f"outputs: {tmp_path} (summary.json, training_curves.png, model card (final/README.md))"
    )


def test_result_lines_per_method() -> None:
    srl = {"method": "srl", "reward_rose": True, "reward_first_fifth": 0.1, "reward_last_fifth": 0.25,
           "wall_time_s": 61.0, "eval": [{"step": 0, "mean_reward": 0.2}, {"step": 3, "mean_reward": 0.3}]}  # fmt: skip
    assert verdict_lines(srl) == [
        "mean reward rose: first fifth +0.100 → last fifth +0.250 in 61s",
        "held-out greedy reward: +0.200 at step 0 → +0.300 at step 3",
    ]
    sft = {"method": "sft", "loss_first_fifth": 2.5, "loss_last_fifth": 1.25, "steps": 10, "wall_time_s": 5}
    assert verdict_lines(sft) == ["SFT loss 2.500 → 1.250 (first → last fifth of 10 steps) in 5s"]
    rlvr = {"stage": "rlvr", "episodes": 8, "mean_outcome_reward": 0.125, "wall_time_s": 9}
    assert verdict_lines(rlvr) == ["RLVR: 8 episodes, mean outcome reward 0.125 in 9s"]


def test_seeds_table_has_a_row_per_policy() -> None:
    over = {"final": {"srl": {"mean": 0.5, "std": 0.1}, "layered": {"mean": 0.4, "std": 0.0}},
            "initial": {"srl": {"mean": 0.2, "std": 0.05}, "layered": {"mean": 0.1, "std": 0.02}}}  # fmt: skip
    table = seeds_table(over, "2 seeds of --method srl")
    assert table.title == "held-out mean ± std over 2 seeds of --method srl"
    assert [c.header for c in table.columns] == ["policy", "srl", "layered"]
    assert list(table.columns[1].cells) == ["+0.500 ± 0.100", "+0.200 ± 0.050"]
