"""The pre-flight check: ``swe-srl train --dry-run`` and a real run's check on CUDA before loading weights, both on
the memory plan of :mod:`swe_srl.train.plan`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from swe_srl.errors import TrainingError
from swe_srl.train.config import load_config, start_of
from swe_srl.train.plan import GIB, plan_for, render
from swe_srl.train.record import write_config
from swe_srl.train.schema import TrainConfig


def gpu_config(path: Path | None, overrides: list[str], cli: dict[str, Any]) -> TrainConfig:
    """The run's config as it resolves on a CUDA machine (``swe-srl train``'s layers: preset → YAML → flags →
    ``--set``), whatever this machine has: the plan is for the GPUs, not for here."""
    return load_config(path, overrides, cuda=True, **cli)


def dry_run(config: TrainConfig, gpus: int, gpu_memory_gib: float, console) -> int:
    """``--dry-run``: write ``config.yaml`` as a run would, print the plan; 0 when it fits, else 1 (the last line
    says ``does not fit: <largest term>; change <key>``)."""
    plan, title = plan_for(config, gpus, gpu_memory_gib)
    written = write_config(config)
    console.print(render(plan, title))
    console.print(f"config: {written}", highlight=False, soft_wrap=True)
    console.print(plan.verdict(), highlight=False, soft_wrap=True)
    return 0 if plan.fits else 1


def check_fits(config: TrainConfig) -> None:
    """A real run's pre-flight check on CUDA, before any weights load: the plan on this machine's cards (the
    processes ``accelerate launch`` started, the first card's memory); a :class:`TrainingError` when it does not
    fit. Nothing to check without CUDA, for the tiny model or without ``max_prompt_tokens``."""
    import torch

    if not torch.cuda.is_available() or start_of(config).name == "tiny" or config.max_prompt_tokens is None:
        return
    gpus = int(os.environ.get("WORLD_SIZE", "1"))
    total = torch.cuda.get_device_properties(0).total_memory / GIB
    plan, title = plan_for(config, gpus, total)
    if not plan.fits:
        raise TrainingError(f"{title}: {plan.verdict()} (swe-srl train --dry-run prints the plan)")
