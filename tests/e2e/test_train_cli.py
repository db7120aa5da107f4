"""The README's main command through the real CLI (subprocess): `swe-srl train --oracle-files --max-steps 3`.

Builds (or reuses from the cache) the bundled suite's scripted-expert trajectories in Docker, decomposes them with
the oracle files, trains the tiny policy and writes metrics, the curves PNG, summary.json, the model card and a model that reloads.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")

pytestmark = [pytest.mark.e2e, pytest.mark.docker, pytest.mark.train]


def test_main_command_trains_and_writes_outputs(docker_engine, tmp_path: Path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from swe_srl.train.data import read_samples

    out = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "swe_srl.cli",
        "train",
        "--oracle-files",
        "--max-steps",
        "3",
        "--set",
        "eval.max_samples=4",  # held-out greedy eval kept (at the end), on a few samples: the test stays cheap
        "--output",
        str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "first fifth" in proc.stdout and "last fifth" in proc.stdout
    # the run ends with its tables, the result lines and one line naming the output folder (no summary JSON)
    outputs = "summary.json, metrics.jsonl, heldout.jsonl, training_curves.png, model card (final/README.md)"
    assert proc.stdout.strip().splitlines()[-1] == f"outputs: {out} ({outputs})"
    assert '"final_model"' not in proc.stdout and "held-out test split" in proc.stdout

    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in records if "reward" in r]
    assert [r["step"] for r in train] == [1, 2, 3]
    for key in (
        "kl",
        "entropy",
        "completions/mean_length",
        "format_error_rate",
        "dynamic_sampling/kept_ratio",
    ):
        assert key in train[-1], key
    # held-out greedy evaluation before training and at the end
    assert [r["step"] for r in records if "eval/mean_reward" in r] == [0, 3]
    assert "held-out greedy reward" in proc.stdout
    assert (out / "training_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 3 and summary["train_samples"] > 0 and summary["test_samples"] > 0
    assert summary["format_warmup"]["loss_last"] < summary["format_warmup"]["loss_first"]
    assert summary["reward_first_fifth"] >= -1.0 and summary["reward_last_fifth"] <= 1.0
    # the model card: base model, data, method, metrics, command
    card = (out / "final" / "README.md").read_text()
    for needle in (
        "embedded tiny Qwen2-shaped model",
        "bundled suite: scripted-expert trajectories of bundled:train (trained on; 4 expert seeds per task), "
        "bundled:test (held out)",
        f"{summary['train_samples'] + summary['warmup_samples']} train",  # the train split
        f"warm-up saw {summary['warmup_samples']} of them",  # half its instances (tiny.warmup_share)
        f"training used the other {summary['train_samples']}",
        "dynamic sampling: on, ε = 0.1",
        "KL β = 0.05",
        f"**{summary['eval'][-1]['mean_reward']:+.3f}** at step 3",
        "swe-srl train --oracle-files --max-steps 3",
    ):
        assert needle in card, needle
    samples = read_samples(Path(summary["samples_file"]))  # format 1 or 2 (shared trajectory/oracle records)
    assert all(
        '<file path="' in s["prompt"][1]["content"] for s in samples
    )  # the oracle files are in the prompts
    assert {s["split"] for s in samples} == {"train", "test"}  # dev only when it is the held-out split
    # every train task comes with several expert runs (expert_seeds: other commands, same problem); test one
    runs: dict[tuple[str, str], set[str]] = {}
    for s in samples:
        runs.setdefault((s["split"], s["instance_id"]), set()).add(s["trajectory_hash"])
    train_runs = [len(h) for (split, _), h in runs.items() if split == "train"]
    assert max(train_runs) == 4 and min(train_runs) >= 2, train_runs
    assert {len(h) for (split, _), h in runs.items() if split != "train"} == {1}

    import torch

    model = AutoModelForCausalLM.from_pretrained(out / "final")
    tokenizer = AutoTokenizer.from_pretrained(out / "final")
    ids = tokenizer("</think>", add_special_tokens=False)["input_ids"]
    assert model(torch.tensor([ids])).logits.shape == (1, len(ids), len(tokenizer))
