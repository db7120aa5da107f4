"""A real model's path on CPU: a Qwen2 checkpoint saved to disk as Qwen2.5's are (bf16, Qwen2.5's chat template)
trains 2 steps through ``--model PATH --preset paper-lora`` (vLLM off), and through the shipped accelerate config
with 2 processes.

Only the batch sizes are cut (``--set``) so that a step fits 2 CPU cores; the rest is the preset's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from swe_srl.train.data import read_samples
from swe_srl.train.tiny.model import sample_texts
from tests.train.qwen_checkpoint import save_qwen_checkpoint

pytest.importorskip("trl")
pytest.importorskip("peft")
pytestmark = pytest.mark.train

ROOT = Path(__file__).resolve().parents[2]
SMALL = [
    "trl.use_vllm=false",
    "trl.per_device_train_batch_size=8",  # one prompt's 8 rollouts per micro-batch
    "trl.gradient_accumulation_steps=2",
    "trl.steps_per_generation=2",
    "trl.max_completion_length=16",
    "eval.max_samples=2",
    "eval.every=0",
]


@pytest.fixture
def qwen_dir(samples_file: Path, tmp_path: Path) -> Path:
    return save_qwen_checkpoint(tmp_path / "qwen", sample_texts(read_samples(samples_file)))


def _sets() -> list[str]:
    return [arg for s in SMALL for arg in ("--set", s)]


def _check_run(out: Path, model: Path) -> dict:
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["steps"] == 2 and summary["model"] == str(model)
    assert "warmup_samples" not in summary  # no tiny warm-up
    config = yaml.safe_load((out / "config.yaml").read_text(encoding="utf-8"))
    assert config["preset"] == "paper-lora" and config["lora"]["enabled"] is True
    assert config["swap_library_names"] == 0 and config["loss"]["replay_weight"] == 0  # no swaps, no anchor
    assert config["max_prompt_tokens"] == 8192 and config["reward"] == "srl"  # the preset's budget and reward
    assert not (out / "tiny-model").exists()
    card = (out / "final" / "README.md").read_text(encoding="utf-8")
    assert "paper-lora" in card
    saved = json.loads((out / "final" / "tokenizer_config.json").read_text(encoding="utf-8"))
    template = saved.get("chat_template") or (out / "final" / "chat_template.jinja").read_text(
        encoding="utf-8"
    )
    assert "<think>" not in template and "You are Qwen" in template  # Qwen2.5's own template, kept
    return summary


def test_paper_lora_trains_a_qwen25_shaped_checkpoint(qwen_dir: Path, samples_file: Path, tmp_path: Path):
    from safetensors import safe_open

    with safe_open(str(qwen_dir / "model.safetensors"), "pt") as weights:
        assert str(weights.get_tensor(next(iter(weights.keys()))).dtype) == "torch.bfloat16"
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "swe_srl.cli", "train", "--model", str(qwen_dir), "--preset", "paper-lora"]
    cmd += ["--samples", str(samples_file), "-o", str(out), "--max-steps", "2", *_sets()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = _check_run(out, qwen_dir)
    assert "paper-lora" in summary["command"]


def test_the_shipped_accelerate_config_trains_on_two_processes(
    qwen_dir: Path, samples_file: Path, tmp_path: Path
):
    """``accelerate launch --config_file configs/accelerate/fsdp.yaml --num_processes 2`` on CPU: accelerate runs
    the two processes over gloo (on CPU it does not shard: FSDP is for GPUs), so every multi-process path runs:
    the gathered rewards and the dynamic-sampling refill, held-out decoding on every rank, checkpoints."""
    out = tmp_path / "run2"
    cmd = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        "configs/accelerate/fsdp.yaml",
    ]
    cmd += ["--num_processes", "2", "--main_process_port", "29517", "-m", "swe_srl.cli", "train"]
    cmd += ["--model", str(qwen_dir), "--preset", "paper-lora", "--samples", str(samples_file)]
    cmd += ["-o", str(out), "--max-steps", "2", *_sets(), "--set", "trl.save_steps=1"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    _check_run(out, qwen_dir)
    assert (out / "checkpoint-2").is_dir()
