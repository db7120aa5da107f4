"""docs/paper.md's recipe at CI size, through the real CLI on CPU with the tiny model: SWE-smith-shaped records (the
shape of the hub's rows: SWE-agent `<function=…>` calls, `resolved`, `model`, `traj_id`) → `swe-srl trajectories
import --resolved-only --model M` → `swe-srl decompose --history 2 --holdout-trajectories 1` → `swe-srl train
--samples … --reward srl --max-steps 2` (the paper's reward) with the validation reward written at every
checkpoint."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")

from swe_srl.train.data import read_samples, split_rows  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.train]
MODEL = "claude-3-7-sonnet-20250219"
FAST = ["tiny.hidden_size=32", "tiny.vocab_size=300", "tiny.warmup_steps=0", "tiny.warmup_share=1",
        "trl.num_generations=2", "trl.per_device_train_batch_size=4", "trl.max_completion_length=8",
        "trl.save_steps=1", "eval.every=1", "eval.max_samples=3", "eval.batch_size=3"]  # fmt: skip
COMMANDS = ("grep -rn 'def add' /testbed", "cat /testbed/calc.py", "python -m pytest -q /testbed/tests",
            "sed -n '1,20p' /testbed/calc.py", "git -C /testbed diff")  # fmt: skip


def record(index: int, steps: int, *, resolved: bool = True, model: str = MODEL) -> dict:
    """One row in the shape of SWE-smith's trajectories (the xml split): a SWE-agent run on a SWE-smith task."""
    instance_id = f"toy__calc.abc123.func_pm_op_swap__{index}"
    messages = [
        {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
        {"role": "user", "content": f"<pr_description>\nadd() subtracts (case {index})\n</pr_description>"},
    ]
    for step in range(steps):
        command = COMMANDS[(index + step) % len(COMMANDS)]
        call = f"<function=bash>\n<parameter=command>{command}</parameter>\n</function>"
        messages += [
            {"role": "assistant", "content": f"Step {step}: look closer.\n\n{call}"},
            {"role": "user", "content": f"OBSERVATION:\noutput {index}.{step}\n" + "line\n" * (step + 1)},
        ]
    messages.append({"role": "assistant", "content": "Done.\n\n<function=submit>\n</function>"})
    return {"messages": messages, "instance_id": instance_id, "resolved": resolved, "model": model,
            "traj_id": f"{instance_id}.r{index}", "patch": ""}  # fmt: skip


def _cli(*args: str) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-m", "swe_srl.cli", *args], capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def pairs(messages: list[dict]) -> int:
    return sum(m["role"] == "assistant" for m in messages)


def test_paper_recipe_at_ci_size(tmp_path: Path) -> None:
    rows = [record(i, 4 + i) for i in range(5)] + [record(7, 5, resolved=False), record(8, 5, model="gpt-4o")]
    raw, trajs, samples = tmp_path / "swe-smith.json", tmp_path / "trajs.jsonl", tmp_path / "samples.jsonl"
    raw.write_text(json.dumps(rows), encoding="utf-8")

    imported = _cli("trajectories", "import", str(raw), "-o", str(trajs), "--resolved-only", "--model", MODEL)
    assert "wrote 5 trajectories" in imported.stdout and "left out: not resolved" in imported.stdout
    _cli("decompose", str(trajs), "-o", str(samples), "--history", "2", "--holdout-trajectories", "1")
    header = json.loads(samples.read_text().splitlines()[0])
    assert header["history"] == 2 and header["holdout_trajectories"] == 1

    train, held = split_rows(read_samples(samples))  # what training reads, by the split rule
    assert len({r["instance_id"] for r in held}) == 1 and len({r["instance_id"] for r in train}) == 4
    assert max(pairs(r["prompt"]) for r in train) == 2  # the paper's window: at most 2 earlier steps
    assert any("earlier steps not shown]" in r["prompt"][1]["content"] for r in train)

    out = tmp_path / "run"
    sets = [x for s in FAST for x in ("--set", s)]
    _cli("train", "--samples", str(samples), "-o", str(out), "--max-steps", "2", "--reward", "srl", *sets)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 2 and summary["test_samples"] == len(held)
    # the validation reward per checkpoint: before training and at each saved step
    assert [e["step"] for e in summary["eval"]] == [0, 1, 2]
    assert all((out / f"checkpoint-{step}").is_dir() for step in (1, 2))
    decoded = [json.loads(line) for line in (out / "heldout.jsonl").read_text().splitlines()]
    assert decoded and all(pairs(r["messages"]) <= 2 for r in decoded)
    assert {r["instance_id"] for r in decoded} == {r["instance_id"] for r in held}
