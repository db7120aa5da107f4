"""The paper presets and what a real model's run resolves to on a CUDA machine (``preflight.gpu_config``: the same
layers as ``load_config``, resolved as on CUDA, so these checks run on any machine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from swe_srl.train.config import load_config
from swe_srl.train.preflight import gpu_config
from swe_srl.train.presets import PAPER_BATCH_PROMPTS, preset_config


def _gpu(tmp_path: Path, sets: list[str] | None = None, **cli) -> object:
    return gpu_config(None, sets or [], {"output": str(tmp_path / "run"), **cli})


@pytest.mark.parametrize(("preset", "processes"), [("paper", 8), ("paper-lora", 1)])
def test_paper_presets_are_table_8(preset: str, processes: int):
    data = preset_config(preset)
    trl = data["trl"]
    assert (trl["learning_rate"], trl["lr_scheduler_type"], trl["warmup_steps"]) == (
        5e-7 if preset == "paper" else 5e-6,
        "constant",
        0,
    )
    assert (trl["num_generations"], trl["temperature"], trl["beta"], trl["max_grad_norm"], trl["bf16"]) == (
        8,
        1.0,
        0.0,
        1.0,
        True,
    )
    completions = trl["per_device_train_batch_size"] * trl["gradient_accumulation_steps"] * processes
    assert completions == PAPER_BATCH_PROMPTS * trl["num_generations"]  # 512 prompts × 8 rollouts per update
    generation = trl["per_device_train_batch_size"] * trl["steps_per_generation"] * processes
    assert (
        generation % trl["num_generations"] == 0
        and trl["gradient_accumulation_steps"] % trl["steps_per_generation"] == 0
    )
    assert (data["reward"], data["effect"], data["max_prompt_tokens"]) == ("srl", "off", 8192)
    assert data.get("lora", {}).get("enabled", False) is (preset == "paper-lora")
    assert preset_config("paper-gpu") == preset_config("paper")  # the old name is an alias


def test_a_real_model_without_a_preset_takes_papers_values(tmp_path: Path):
    config = load_config(None, [], model=str(tmp_path / "m"), output=str(tmp_path / "run"))
    assert config.preset == "paper" and config.max_prompt_tokens == 8192  # never whole prompts by default
    assert config.trl["learning_rate"] == 5e-7 and config.trl["beta"] == 0.0 and config.reward == "srl"
    assert config.fast_generation is False  # no static cache sized batch × full length for real models


def test_full_fine_tuning_keeps_fp32_master_weights(tmp_path: Path):
    full = _gpu(tmp_path, preset="paper", model="m")
    assert full.trl["model_init_kwargs"] == {"dtype": "float32"} and full.trl["bf16"] is True  # bf16 autocast
    lora = _gpu(tmp_path, preset="paper-lora", model="m")
    assert lora.trl["model_init_kwargs"] == {"dtype": "bfloat16"}  # the frozen base in bf16; adapters fp32
    mine = _gpu(tmp_path, ["trl.model_init_kwargs.attn_implementation=sdpa"], preset="paper", model="m")
    assert mine.trl["model_init_kwargs"] == {"dtype": "float32", "attn_implementation": "sdpa"}  # merged
    own = _gpu(tmp_path, ["trl.model_init_kwargs.dtype=bfloat16"], preset="paper", model="m")
    assert own.trl["model_init_kwargs"] == {"dtype": "bfloat16"}  # the run's own dtype wins


def test_the_vllm_extra_pins_what_the_installed_trl_supports():
    import tomllib
    from importlib.metadata import requires

    root = Path(__file__).resolve().parents[2]
    extra = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    ours = {r.split(">")[0].split("<")[0]: r for r in extra["vllm"]}
    trls = [r.split(";")[0].strip() for r in requires("trl") or [] if 'extra == "vllm"' in r]
    trl_vllm = next(r for r in trls if r.startswith("vllm"))
    assert sorted(trl_vllm.removeprefix("vllm").split(",")) == sorted(
        ours["vllm"].removeprefix("vllm").split(",")
    )
    assert ours["trl[vllm]"] == "trl[vllm]>=1.16,<1.17" and "swe-srl[train]" in extra["vllm"]
