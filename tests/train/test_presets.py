"""Presets and the CLI's early checks, through the real `swe-srl train` (subprocess).

``--preset cpu-small`` trains a ~4.5M-parameter local Qwen2 model (hidden 256, 4 layers, built here with a BPE
tokenizer trained on the samples) with no other override; the full 20 steps take a few minutes on 2 CPU cores
(docs/training.md "Presets"), the test runs 2.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from swe_srl.train.data import read_samples  # noqa: E402
from swe_srl.train.tiny.model import build_tokenizer, sample_texts  # noqa: E402

pytestmark = pytest.mark.train


def small_model(directory: Path, rows: list[dict]) -> Path:
    """A random-init Qwen2ForCausalLM (hidden 256, 4 layers) + a 2,000-token BPE tokenizer, saved to ``directory``."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    tokenizer = build_tokenizer(sample_texts(rows), 2000)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=256,
        intermediate_size=1024,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=16384,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    tokenizer.save_pretrained(directory)
    model.save_pretrained(directory)
    return directory


def _train(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "swe_srl.cli", "train", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def test_cpu_small_preset_trains_a_small_local_model(samples_file: Path, tmp_path: Path):
    from transformers import AutoModelForCausalLM

    model = small_model(tmp_path / "small", read_samples(samples_file))
    n_params = sum(p.numel() for p in AutoModelForCausalLM.from_pretrained(model).parameters())
    assert 3_000_000 < n_params < 7_000_000
    out = tmp_path / "run"
    args = [
        "--model",
        str(model),
        "--preset",
        "cpu-small",
        "--samples",
        str(samples_file),
        "--output",
        str(out),
    ]
    proc = _train(*args, "--max-steps", "2")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 2 and summary["model"] == str(model)
    assert (
        summary["command"].startswith("swe-srl train --model") and "--preset cpu-small" in summary["command"]
    )
    train = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if '"reward"' in x]
    assert [r["step"] for r in train] == [1, 2]
    assert all(
        r["completions/mean_length"] <= 32 and r["learning_rate"] <= 1e-4 for r in train
    )  # the preset's
    assert [e["step"] for e in summary["eval"]] == [2]  # eval at the end only
    card = (out / "final" / "README.md").read_text()
    assert f"from **{model}**" in card and "4 generations per prompt" in card and "--preset cpu-small" in card
    # a real model (--model) writes the same held-out report as the tiny default: every test sample, both rewards
    assert summary["reward"] == "layered"  # the layered default of real models
    held = [json.loads(x) for x in (out / "heldout.jsonl").read_text().splitlines()]
    assert held and len(held) == summary["heldout"]["samples"] == summary["test_samples"]
    assert {"final", "initial", "always_ls", "copy_previous", "frequent_at_step"} <= set(
        summary["heldout"]["means"]
    )
    assert all(
        set(h["final_reward"]) == {"srl", "layered"} and h["prompt"] and h["final_output"] for h in held
    )


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("trl.learning_rate=abc", "error: invalid value for trl.learning_rate: 'abc' (str); expected float"),
        ("trl.max_steps=ten", "error: invalid value for trl.max_steps: 'ten' (str); expected int"),
    ],
)
def test_wrong_typed_trl_value_fails_before_any_work(tmp_path: Path, override: str, message: str):
    out = tmp_path / "never"
    proc = _train("--set", override, "--output", str(out), timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == message and "Traceback" not in proc.stdout + proc.stderr
    assert not out.exists()  # no samples, no model, no output directory
