"""WiSE-FT: the saved final policy as a mix of the starting and the trained weights (``wise_ft``).

Wortsman et al. (2022) fine-tune, then average the fine-tuned weights with the starting ones parameter by
parameter, ``(1 − a) × start + a × trained``: the mix keeps most of what training gained on the training
distribution and gives back less of what the start did well elsewhere. Here the start is the policy GRPO began
from (the tiny model after its format warm-up, or ``--model``/``--init``), ``a`` is ``wise_ft`` (1, the default:
the trained weights as they are; what a mix did on the dev and test splits: docs/experiments.md, WiSE-FT).
Checkpoints keep the trained weights, so ``--resume`` continues GRPO itself; only ``final/`` and the held-out
report's final outputs are the mix. ``bench/interpolate.py`` replays any ``a`` on a
finished run's held-out samples.
"""

from __future__ import annotations

from typing import Any

import torch


def snapshot(model: Any) -> dict[str, Any]:
    """A copy of ``model``'s floating-point weights on the CPU (the start, taken before training)."""
    return {
        k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items() if v.is_floating_point()
    }


def mixed_state(start: dict[str, Any], trained: dict[str, Any], share: float) -> dict[str, Any]:
    """``(1 − share) × start + share × trained`` for every floating-point tensor of ``start``; the others (and any
    tensor ``start`` lacks) from ``trained`` as they are, in ``trained``'s dtype and device."""
    mixed = dict(trained)
    for key, weight in start.items():
        now = trained[key]
        mixed[key] = torch.lerp(weight.to(now.device, torch.float32), now.float(), share).to(now.dtype)
    return mixed


def apply_wise(model: Any, start: dict[str, Any], share: float) -> None:
    """Load the WiSE-FT mix of ``start`` and ``model``'s trained weights into ``model`` (nothing at ``share`` 1)."""
    if share >= 1.0:
        return
    model.load_state_dict(mixed_state(start, model.state_dict(), share))
