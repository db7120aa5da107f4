"""Named starting configs (``--preset NAME``): the bottom layer under ``--config`` YAML, CLI flags and ``--set``.

``cpu-tiny``: the embedded tiny model (the default without ``--model``). ``cpu-small``: a small local model
(``--model PATH``, a few million parameters) on CPU, 20 steps in minutes. ``paper-gpu``: the SRL paper's setting on
Qwen2.5-Coder-7B-Instruct (bf16, vLLM generation when vLLM is installed; add ``--lora`` for one 80 GB card).
"""

from __future__ import annotations

import copy
from typing import Any

from swe_srl.errors import ConfigError
from swe_srl.train.trl_options import vllm_available

REAL_TRL_DEFAULTS: dict[str, Any] = {
    "num_generations": 8,
    "temperature": 1.0,
    "learning_rate": 5e-6,
    "lr_scheduler_type": "cosine_with_min_lr",
    "lr_scheduler_kwargs": {"min_lr": 1e-6},
    "beta": 0.05,
    "per_device_train_batch_size": 32,  # completions per micro-batch
    "gradient_accumulation_steps": 8,  # 32 × 8 = 256 completions = 32 prompts × 8 generations per step
    "max_completion_length": 512,
    "max_grad_norm": 1.0,
    "num_train_epochs": 1,
    "gradient_checkpointing": True,
    "bf16": True,
    "logging_steps": 1,
    "save_steps": 100,
}
"""The method's (SRL paper) TRL settings for real models: the defaults with ``--model`` and no preset."""

TINY_TRL_DEFAULTS: dict[str, Any] = {
    "num_generations": 8,
    "temperature": 1.0,
    "learning_rate": 3e-4,  # chosen on dev after the prompt-reading warm-up: 1e-3 traded the layered reward away
    "lr_scheduler_type": "cosine_with_min_lr",
    "lr_scheduler_kwargs": {"min_lr": 2e-4},
    "warmup_steps": 0,
    "beta": 0.05,
    "per_device_train_batch_size": 32,  # 4 prompts × 8 generations
    "gradient_accumulation_steps": 1,
    "max_completion_length": 32,  # 87% of the train split's expert actions fit (vocab 2048)
    "max_grad_norm": 1.0,
    "max_steps": 80,  # 40 -> 80 on dev once a step took 7 s (docs/training.md "80 GRPO steps")
    "logging_steps": 1,
    "save_steps": 40,
    "bf16": False,
}
"""TRL settings of the embedded tiny model (tuned to learn on 2 CPU cores)."""

TINY_REWARD = "mixed"
"""The tiny model's default reward (``--reward`` still wins), chosen on the dev split (docs/training.md): GRPO on the
layered reward alone drifted to its floor (``ls``/``submit`` everywhere), on the paper reward alone invalid commands grew
on some seeds (dev syntax layer 0.61 on one); their mean ended higher under the layered reward on three dev
seeds of three (+0.017, +0.135, +0.040) at about the same paper reward (-0.015, +0.021, -0.045)."""

TINY_LOSS: dict[str, Any] = {"sft_thought": False, "replay_weight": 0.1}
"""The tiny model's loss defaults. ``sft_thought`` false: its warm-up and greedy decoding write an empty thought, so
its SFT targets (the SFT term, the replay anchor, ``--method sft``) have none. ``replay_weight`` 0.1: the replay anchor,
chosen on the dev split (docs/training.md "Round 26"): it keeps the late steps (``submit`` after a passing test) that
GRPO's dropped groups left unheld."""

TINY_SWAP = 1.0
"""The tiny model's default ``swap_library_names``: GRPO on train samples whose library names are swapped
(``swe_srl.train.augment``), chosen on the dev split (docs/training.md). With names from another train library it ended
higher under the layered reward on three dev seeds of three (+0.024, +0.036, +0.102) but made no difference on test;
with names from the standard library (``swap_pool``'s default, an open set) it ended higher than that on dev by
+0.063 / +0.039 (paper / layered, mean of 3 seeds); on test neither pool beat the other from the same starts."""

CPU_SMALL: dict[str, Any] = {
    "max_prompt_tokens": 384,  # the latest messages whole (the prompt fitter), as the tiny model's context
    "dynamic_sampling": {"max_rounds": 2},
    "eval": {"every": 0, "max_samples": 8},
    "trl": {
        "num_generations": 4,
        "per_device_train_batch_size": 16,  # 4 prompts × 4 generations per step
        "gradient_accumulation_steps": 1,
        "max_completion_length": 32,
        "learning_rate": 1e-4,
        "lr_scheduler_type": "cosine_with_min_lr",
        "lr_scheduler_kwargs": {"min_lr": 1e-5},
        "warmup_steps": 0,
        "beta": 0.05,
        "max_steps": 20,
        "save_steps": 10,
        "logging_steps": 1,
        "gradient_checkpointing": False,
        "bf16": False,
    },
}


def paper_gpu() -> dict[str, Any]:
    """Qwen2.5-Coder-7B-Instruct with the method's settings; vLLM (colocated) generation when it is installed."""
    vllm = vllm_available()
    trl = {**REAL_TRL_DEFAULTS, "use_vllm": vllm}
    if vllm:
        trl.update(vllm_mode="colocate", vllm_gpu_memory_utilization=0.3)
    return {"model": "Qwen/Qwen2.5-Coder-7B-Instruct", "max_prompt_tokens": 16384, "trl": trl}


PRESETS: dict[str, Any] = {
    "cpu-tiny": lambda: {},
    "cpu-small": lambda: copy.deepcopy(CPU_SMALL),
    "paper-gpu": paper_gpu,
}


def preset_config(name: str | None) -> dict[str, Any]:
    """The config dict of preset ``name`` (None → empty)."""
    if name is None:
        return {}
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}: use one of {', '.join(PRESETS)}")
    return PRESETS[name]()


def deep_merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``, sections (dicts) merged key by key."""
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out
