"""The held-out report: heldout.jsonl lines re-score to their recorded rewards; baselines and intervals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from swe_srl.core.actions import format_output  # noqa: E402
from swe_srl.core.prompts import build_messages  # noqa: E402
from swe_srl.rewards import score_output  # noqa: E402
from swe_srl.train.heldout import REWARDS, heldout_report, report_table, step_table  # noqa: E402
from swe_srl.train.tiny.model import build_tokenizer  # noqa: E402

pytestmark = pytest.mark.train

ACTIONS = [
    "ls",
    "grep -rn 'def add' calc",
    "sed -n '1,20p' calc/core.py",
    "python -m pytest tests -q",
    "submit",
]


def _rows(traj: str, split: str) -> list[dict]:
    rows, history = [], []
    for step, action in enumerate(ACTIONS):
        messages = build_messages(
            "add() returns a - b", history, oracle_files={"calc/core.py": "def add(a, b):\n"}
        )
        rows.append({"prompt": messages, "expert_action": action, "instance_id": f"toy__calc-{traj}", "step": step,
                     "trajectory_hash": traj, "split": split, "oracle_files": ["calc/core.py"]})  # fmt: skip
        history.append((action, "ok"))
    return rows


def test_heldout_lines_rescore_and_the_report_compares_with_baselines(tmp_path: Path) -> None:
    train = _rows("a", "train") + _rows("b", "train")
    test = _rows("t", "test")
    tokenizer = build_tokenizer([m["content"] for r in train for m in r["prompt"]] + ACTIONS, 300)
    initial = ["<think>\n</think>\nls"] * len(test)  # the starting policy always lists
    final = [format_output("look", r["expert_action"]) for r in test]  # a policy that acts as the expert does
    report = heldout_report(tmp_path, train, test, tokenizer, initial, final)
    lines = [json.loads(x) for x in (tmp_path / "heldout.jsonl").read_text().splitlines()]
    assert (
        len(lines) == len(test)
        and lines[1]["id"] == "toy__calc-t#1"
        and lines[1]["oracle_paths"] == ["calc/core.py"]
    )
    assert lines[0]["prompt"].endswith("<|im_start|>assistant\n<think>")  # the template's generation prompt
    for line in lines:  # `swe-srl reward --expert E --action OUTPUT` gives what was recorded
        for mode in REWARDS:
            assert (
                line["final_reward"][mode]
                == score_output(line["final_output"], line["expert_action"], mode=mode).total
            )
            assert (
                line["initial_reward"][mode]
                == score_output(line["initial_output"], line["expert_action"], mode=mode).total
            )
    assert set(report["means"]) == {"final", "initial", "always_ls", "always_submit", "always_git_diff",
                                    "copy_previous", "frequent_at_step"}  # fmt: skip
    assert report["means"]["initial"] == report["means"]["always_ls"]  # the same outputs, the same scores
    assert report["means"]["final"]["srl"] == pytest.approx(1.0)
    vs = report["final_vs"]["layered"]["always_submit"]
    assert vs["low"] <= vs["mean_diff"] <= vs["high"] and vs["mean_diff"] > 0
    # the expert's own action at every step: always_submit ties on the last step only, so final beats it;
    # frequent_at_step (train trajectories have the same actions) equals the expert: no margin, target not met
    assert report["final_vs"]["srl"]["frequent_at_step"]["mean_diff"] == pytest.approx(0.0)
    assert report["target_met"] is False
    assert report_table(report).row_count == len(report["means"])
    # the layered reward's layers, start vs final: the expert's own actions are semantically exact, `ls` is not
    layers = report["layers"]
    assert layers["final"]["semantic"] == pytest.approx(1.0) and layers["initial"]["semantic"] < 0.5
    assert layers["final"]["syntax"] == pytest.approx(1.0)
    assert "semantic" in str(report_table(report).caption)
    # by step index: the start's `ls` is the expert's own action at step 0 only; the final's is exact everywhere
    steps = report["by_step"]
    assert list(steps) == [str(k) for k in range(len(ACTIONS))] and all(
        c["samples"] == 1 for c in steps.values()
    )
    assert steps["0"]["initial_srl"] == pytest.approx(1.0) and steps["3"]["initial_srl"] < 0.5
    assert all(c["final_srl"] == pytest.approx(1.0) for c in steps.values())
    means = report["means"]
    for mode in REWARDS:  # the steps' shares add up to final − start
        share = sum(c[f"final_{mode}"] - c[f"initial_{mode}"] for c in steps.values()) / report["samples"]
        assert share == pytest.approx(means["final"][mode] - means["initial"][mode])
    table = step_table(report)
    assert (
        table.row_count == len(ACTIONS) and "+0.000" in list(table.columns[3].cells)[0]
    )  # step 0: no change


def test_the_step_table_keeps_early_steps_apart_and_merges_the_late_ones() -> None:
    cells = {str(k): {"samples": 2} | {f"{w}_{m}": float(w == "final") for w in ("initial", "final") for m in REWARDS}
             for k in range(10)}  # fmt: skip
    table = step_table({"samples": 20, "by_step": cells})
    rows = list(table.columns[0].cells)
    assert rows == [*map(str, range(7)), "7+"] and list(table.columns[1].cells)[-1] == "6"
    assert list(table.columns[3].cells)[-1] == "+0.300"  # 6 of 20 samples, each +1
    assert list(table.columns[2].cells)[-1] == "0.000 → 1.000"
