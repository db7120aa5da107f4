"""A real model's path on CPU: a Qwen2 checkpoint saved to disk as Qwen2.5's are (bf16, Qwen2.5's chat template)
trains 2 steps through ``--model PATH --preset paper-lora`` (vLLM off), and through the shipped accelerate config
with 2 processes, sharded with FSDP2 as on GPUs, both with ``paper-lora`` and with ``paper`` (full fine-tune).

The checkpoint has learnt the answer format (``prime_format``), so its rollouts score apart and both runs take real
gradient steps. Only the batch sizes are cut (``--set``) so that a step fits 2 CPU cores; the rest is the preset's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from swe_srl.train.data import read_samples
from swe_srl.train.tiny.model import sample_texts
from tests.train.conftest import make_samples
from tests.train.launching import ROOT, launch_fsdp_train, sets
from tests.train.qwen_checkpoint import prime_format, save_qwen_checkpoint

pytest.importorskip("trl")
pytest.importorskip("peft")
pytestmark = pytest.mark.train

SMALL = [
    "trl.use_vllm=false",
    "trl.per_device_train_batch_size=8",  # one prompt's 8 rollouts per micro-batch
    "trl.gradient_accumulation_steps=2",
    "trl.steps_per_generation=2",
    "trl.max_completion_length=40",
    "eval.max_samples=2",
    "eval.every=0",
]


@pytest.fixture(scope="module")
def samples_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("samples") / "samples.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in make_samples()), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def qwen_dir(samples_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    samples = read_samples(samples_file)
    directory = save_qwen_checkpoint(tmp_path_factory.mktemp("model") / "qwen", sample_texts(samples))
    return prime_format(directory, samples)


@pytest.fixture(scope="module")
def one_process_run(qwen_dir: Path, samples_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "run"
    cmd = [sys.executable, "-m", "swe_srl.cli", "train", "--model", str(qwen_dir), "--preset", "paper-lora"]
    cmd += ["--samples", str(samples_file), "-o", str(out), "--max-steps", "2", *_sets()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out


def _sets() -> list[str]:
    return sets(SMALL)


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
    steps = [json.loads(line) for line in (out / "metrics.jsonl").read_text(encoding="utf-8").splitlines()]
    steps = [row for row in steps if "grad_norm" in row]
    # real updates: every step's rollouts scored apart and moved the weights
    assert len(steps) == 2 and all(row["grad_norm"] > 0 and row["reward_std"] > 0 for row in steps)
    return summary


def _lora(out: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(out / "final" / "adapter_model.safetensors"))


def _initial_outputs(out: Path) -> list[str]:
    rows = (out / "heldout.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["initial_output"] for line in rows]


def test_paper_lora_trains_a_qwen25_shaped_checkpoint(qwen_dir: Path, one_process_run: Path):
    from safetensors import safe_open

    with safe_open(str(qwen_dir / "model.safetensors"), "pt") as weights:
        assert str(weights.get_tensor(next(iter(weights.keys()))).dtype) == "torch.bfloat16"
    summary = _check_run(one_process_run, qwen_dir)
    assert "paper-lora" in summary["command"]
    assert all(w.abs().max() > 0 for name, w in _lora(one_process_run).items() if "lora_B" in name)


def test_the_shipped_accelerate_config_trains_on_two_processes(
    qwen_dir: Path, samples_file: Path, one_process_run: Path, tmp_path: Path
):
    """``accelerate launch --config_file configs/accelerate/fsdp.yaml --num_processes 2`` on CPU, over gloo and
    sharded (``train.sharding.shard_on_cpu``): the gathered rewards and the dynamic-sampling refill, held-out
    decoding on every rank from shards (the same greedy text as one unsharded process), sharded checkpoints, whole
    weights in ``final/``."""
    out = tmp_path / "run2"
    args = [
        "--model",
        str(qwen_dir),
        "--preset",
        "paper-lora",
        "--samples",
        str(samples_file),
        "-o",
        str(out),
    ]
    launch_fsdp_train([*args, "--max-steps", "2", *_sets(), "--set", "trl.save_steps=1"], port=29517)
    _check_run(out, qwen_dir)
    assert (out / "checkpoint-2" / "pytorch_model_fsdp.bin").is_file()  # FSDP's own (sharded-model) save
    assert _initial_outputs(out) == _initial_outputs(one_process_run)
    sharded, whole = _lora(out), _lora(one_process_run)
    # gathered whole, not one rank's shards
    assert {k: w.shape for k, w in sharded.items()} == {k: w.shape for k, w in whole.items()}
    assert all(w.abs().max() > 0 for name, w in sharded.items() if "lora_B" in name)


def test_the_paper_preset_fine_tunes_all_weights_under_fsdp_in_fp32(
    qwen_dir: Path, samples_file: Path, tmp_path: Path
):
    """The 8-GPU command's path, on 2 CPU processes: ``--preset paper`` (full fine-tune, lr 5e-7) under the shipped
    FSDP config with bf16 compute. Every weight moves by about the learning rate per step, which bf16 weights
    could not hold (their spacing near these weights is ~1e-4): the sharded master weights are fp32, and
    ``final/`` holds them whole."""
    from safetensors.torch import load_file

    out = tmp_path / "full"
    args = ["--model", str(qwen_dir), "--preset", "paper", "--samples", str(samples_file), "-o", str(out)]
    launch_fsdp_train([*args, "--max-steps", "2", *_sets(), "--set", "trl.bf16=true"], port=29523)
    config = yaml.safe_load((out / "config.yaml").read_text(encoding="utf-8"))
    assert config["preset"] == "paper" and config["lora"]["enabled"] is False
    assert config["trl"]["bf16"] is True
    assert config["trl"]["learning_rate"] == 5e-7
    start = load_file(str(qwen_dir / "model.safetensors"))
    final = load_file(str(out / "final" / "model.safetensors"))
    assert set(final) == set(start)
    assert all(final[k].shape == start[k].shape for k in start)  # whole, not shards
    assert {str(w.dtype) for w in final.values()} == {"torch.float32"}
    moved = {k: (final[k] - start[k].float()).abs().max().item() for k in start}
    assert all(0 < m < 1e-4 for m in moved.values()), moved  # every tensor, by about lr × steps
