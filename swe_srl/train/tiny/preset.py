"""The ``cpu-tiny`` preset: the embedded tiny model's defaults, written out (``--model tiny``, the default).

:func:`cpu_tiny` is the preset of an SRL run; :func:`tiny_preset` adapts it to the stage and method of the run
(the SFT baseline imitates plain samples without the replay anchor; RLVR episodes take their own TRL settings; an
effect layer asks for the layered reward). Everything here sits under the run's ``--config`` YAML, flags and
``--set`` (:func:`swe_srl.train.config.load_config`).
"""

from __future__ import annotations

import copy
from typing import Any

TINY_TRL_DEFAULTS: dict[str, Any] = {
    "num_generations": 8,
    "temperature": 1.0,
    "learning_rate": 3e-4,  # 1e-3 traded the layered reward away on dev (docs/experiments.md)
    "lr_scheduler_type": "cosine_with_min_lr",
    "lr_scheduler_kwargs": {"min_lr": 2e-4},
    "warmup_steps": 0,
    "beta": 0.05,
    "per_device_train_batch_size": 32,  # 4 prompts × 8 generations
    "gradient_accumulation_steps": 1,
    "max_completion_length": 32,  # 87% of the train split's expert actions fit (vocab 2048)
    "max_grad_norm": 1.0,
    "max_steps": 80,  # 40 ended level or lower on dev (docs/experiments.md)
    "logging_steps": 1,
    "save_steps": 40,
    "bf16": False,
}
"""TRL settings of the embedded tiny model (tuned to learn on 2 CPU cores)."""

TINY_REWARD = "mixed"
"""The tiny model's default reward (``--reward`` still wins): the mean of the paper reward and the layered one. GRPO
on the layered reward alone drifts to its floor (``ls``/``submit`` everywhere); on the paper reward alone invalid
commands grow; the mean keeps the paper reward's pull towards the expert's text and the layered reward's 0 for an
invalid command (chosen on the dev split: docs/experiments.md)."""

TINY_LOSS: dict[str, Any] = {"sft_thought": False, "replay_weight": 0.1}
"""The tiny model's loss defaults. ``sft_thought`` false: its warm-up and greedy decoding write an empty thought, so
its SFT targets (the SFT term, the replay anchor, ``--method sft``) have none. ``replay_weight`` 0.1: the replay anchor,
which holds the late steps (``submit`` after a passing test) whose groups dynamic sampling drops (chosen on the dev
split: docs/experiments.md, the replay anchor)."""

TINY_SWAP = 1.0
"""The tiny model's default ``swap_library_names``: GRPO on train samples whose library names are swapped
(:mod:`swe_srl.train.tiny.augment`), so that a name recalled from the train libraries is wrong there, as on a held-out
library, and only a name read from the prompt pays (chosen on the dev split; on test it made no measurable
difference: docs/experiments.md)."""

TINY_RLVR_TRL_DEFAULTS: dict[str, Any] = {
    "num_generations": 2,
    "temperature": 1.0,
    "learning_rate": 1e-4,
    "beta": 0.05,
    "per_device_train_batch_size": 4,  # 2 prompts × 2 episodes
    "gradient_accumulation_steps": 1,
    "max_completion_length": 256,
    "max_grad_norm": 1.0,
    "max_steps": 4,
    "logging_steps": 1,
    "save_steps": 2,
    "bf16": False,
}
"""TRL settings of ``--stage rlvr`` from a tiny checkpoint: small, so that it runs on CPU."""

CPU_TINY: dict[str, Any] = {
    "model": "tiny",
    "reward": TINY_REWARD,
    "swap_library_names": TINY_SWAP,
    "loss": TINY_LOSS,
    "trl": TINY_TRL_DEFAULTS,
}
"""The ``cpu-tiny`` preset of an SRL run (``--stage srl --method srl``)."""


def cpu_tiny() -> dict[str, Any]:
    """The ``cpu-tiny`` preset (a copy of :data:`CPU_TINY`)."""
    return copy.deepcopy(CPU_TINY)


def tiny_preset(stage: str = "srl", method: str = "srl", effect: str = "off") -> dict[str, Any]:
    """The tiny start's defaults for a run of ``stage`` and ``method`` (``effect``: the run's effect layer)."""
    preset = cpu_tiny()
    if effect != "off":  # asking for an effect layer means the layered reward
        preset["reward"] = "layered"
    if (stage, method) != ("srl", "srl"):  # the replay anchor is SRL's
        del preset["loss"]["replay_weight"]
    if method != "srl":  # the SFT baseline imitates the plain samples
        del preset["swap_library_names"]
    if stage == "rlvr":
        preset["trl"] = copy.deepcopy(TINY_RLVR_TRL_DEFAULTS)
    return preset
