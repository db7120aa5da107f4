"""The pre-flight memory plan (``swe-srl train --dry-run``) on Qwen2.5-Coder-7B-Instruct's shape.

The model is its ``config.json`` alone, written here: the plan reads nothing else (no weights, no tokenizer).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from swe_srl.errors import ConfigError
from swe_srl.train.plan import ModelShape, plan_for
from swe_srl.train.preflight import gpu_config

QWEN_7B = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "num_hidden_layers": 28,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "vocab_size": 152064,
    "tie_word_embeddings": False,
    "max_position_embeddings": 32768,
}


@pytest.fixture
def qwen7b(tmp_path: Path) -> Path:
    folder = tmp_path / "qwen2.5-coder-7b"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(QWEN_7B), encoding="utf-8")
    return folder


def _plan(model: Path, preset: str, gpus: int, sets: list[str] | None = None, gib: float = 80):
    config = gpu_config(
        None, sets or [], {"preset": preset, "model": str(model), "output": str(model / "run")}
    )
    return config, plan_for(config, gpus, gib)[0]


def test_the_shape_counts_qwen_7b_parameters():
    shape = ModelShape.from_config(QWEN_7B, "config.json")
    assert shape.head_dim == 128 and shape.kv_dim == 512
    assert 7.61e9 < shape.params < 7.62e9  # Qwen2.5-7B: 7.61B parameters (untied embeddings)
    with pytest.raises(ConfigError, match="no integer 'hidden_size'"):
        ModelShape.from_config({"model_type": "qwen2"}, "x/config.json")


def test_paper_lora_fits_one_80gb_card_at_the_paper_batch(qwen7b: Path):
    config, plan = _plan(qwen7b, "paper-lora", 1)
    assert config.lora.enabled and plan.fits, plan.verdict()
    assert plan.completions_per_step == 512 * 8  # Table 8: 512 prompts × 8 rollouts per update
    assert plan.tokens_per_micro_batch == 4 * (8192 + 512)
    terms = {t.name: t.gib for t in plan.terms}
    assert terms["reference model"] == 0.0  # beta 0
    assert 14 < terms["weights"] < 15  # bf16 base: 2 bytes × 7.6B
    assert plan.verdict().startswith("fits: ")


def test_paper_fits_eight_80gb_cards_and_is_refused_on_one(qwen7b: Path):
    config, plan = _plan(qwen7b, "paper", 8)
    assert not config.lora.enabled and plan.fits, plan.verdict()
    assert plan.completions_per_step == 512 * 8
    _, alone = _plan(qwen7b, "paper", 1)
    assert not alone.fits
    assert (
        alone.verdict()
        == f"does not fit: optimizer states {8 * alone.params / 2**30:.1f} GiB; change lora.enabled"
    )


def test_the_plan_follows_the_config(qwen7b: Path):
    _, base = _plan(qwen7b, "paper-lora", 1)
    _, bigger = _plan(
        qwen7b, "paper-lora", 1, ["trl.per_device_train_batch_size=32", "trl.steps_per_generation=1"]
    )
    assert not bigger.fits and bigger.verdict().endswith("change trl.per_device_train_batch_size")
    _, beta = _plan(qwen7b, "paper", 8, ["trl.beta=0.05"])
    assert {t.name: t.gib for t in beta.terms}["reference model"] > 0
    _, whole = _plan(qwen7b, "paper-lora", 1, ["max_prompt_tokens=16384"])
    assert whole.tokens_per_micro_batch == 4 * (16384 + 512) and whole.peak_gib > base.peak_gib
    with pytest.raises(ConfigError, match="the plan is for real models"):
        plan_for(gpu_config(None, [], {"output": str(qwen7b / "run")}), 1, 80)


def _dry_run(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "swe_srl.cli", "train", *args, "--dry-run"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={"COLUMNS": "160", **_env()})


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "COLUMNS"}


def test_dry_run_cli_writes_the_config_and_exits_by_the_verdict(qwen7b: Path, tmp_path: Path):
    out = tmp_path / "plan"
    ok = _dry_run(
        "--model", str(qwen7b), "--preset", "paper", "--gpus", "8", "--gpu-memory", "80", "-o", str(out)
    )
    assert ok.returncode == 0, ok.stdout[-2000:] + ok.stderr[-2000:]
    for term in ("weights", "gradients", "optimizer states", "reference model", "activations", "tokens per"):
        assert term in ok.stdout
    assert ok.stdout.strip().splitlines()[-1].startswith("fits: ")
    written = yaml.safe_load((out / "config.yaml").read_text(encoding="utf-8"))
    assert written["preset"] == "paper" and written["trl"]["learning_rate"] == 5e-7
    assert (
        written["trl"]["gradient_checkpointing"] is True and written["trl"]["bf16"] is True
    )  # the GPUs' values
    assert not (out / "final").exists() and not (out / "summary.json").exists()  # nothing trained
    refused = _dry_run(
        "--model", str(qwen7b), "--preset", "paper", "--gpus", "1", "-o", str(tmp_path / "one")
    )
    assert refused.returncode != 0
    assert refused.stdout.strip().splitlines()[-1] == (
        "does not fit: optimizer states 56.7 GiB; change lora.enabled"
    )
