"""Group statistics for GRPO batches: the dynamic-sampling filter, the rloo advantage and merging generation rounds."""

from __future__ import annotations

from typing import Any

import torch

from swe_srl.errors import TrainingError


def group_stats(
    rewards: torch.Tensor, num_generations: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per group: (valid count, mean, unbiased std) over the non-NaN rewards."""
    grouped = rewards.view(-1, num_generations)
    valid = ~torch.isnan(grouped)
    count = valid.sum(dim=1)
    filled = torch.where(valid, grouped, torch.zeros_like(grouped))
    mean = filled.sum(dim=1) / count.clamp(min=1)
    sq = torch.where(valid, (grouped - mean.unsqueeze(1)) ** 2, torch.zeros_like(grouped)).sum(dim=1)
    std = torch.sqrt(sq / (count - 1).clamp(min=1))
    return count, mean, std


def group_keep_mask(rewards: torch.Tensor, num_generations: int, epsilon: float) -> torch.Tensor:
    """True for each group with at least two scored samples and reward std > epsilon."""
    count, _, std = group_stats(rewards, num_generations)
    return (count >= 2) & (std > epsilon)


def rloo_advantages(rewards: torch.Tensor, num_generations: int, scale: str = "none") -> torch.Tensor:
    """Leave-one-out advantages: r − mean of the other scored rewards of the group; NaN rewards (infra failures)
    get 0 and are left out of their group's baseline. ``scale``: ``none``, or divide by the ``group`` / ``batch``
    reward std (+1e-4), as ``trl.scale_rewards`` does for GRPO."""
    count, _, std = group_stats(rewards, num_generations)
    grouped = rewards.view(-1, num_generations)
    total = torch.nansum(grouped, dim=1, keepdim=True)
    others = (count - 1).clamp(min=1).unsqueeze(1)
    adv = grouped - (total - grouped) / others
    adv = torch.where((count >= 2).unsqueeze(1), adv, torch.zeros_like(adv))
    if scale == "group":
        adv = adv / (std.unsqueeze(1) + 1e-4)
    elif scale == "batch":
        valid = rewards[~torch.isnan(rewards)]
        adv = adv / ((valid.std() if valid.numel() > 1 else torch.zeros(())) + 1e-4)
    elif scale != "none":
        raise TrainingError(f"unknown scale_rewards {scale!r}: use 'group', 'batch' or 'none'")
    return torch.nan_to_num(adv, nan=0.0).reshape(-1)


def _pad_cat(tensors: list[torch.Tensor], left: bool, value: float) -> torch.Tensor:
    width = max(t.shape[1] for t in tensors)
    padded = []
    for t in tensors:
        extra = width - t.shape[1]
        pad = (extra, 0) if left else (0, extra)
        padded.append(torch.nn.functional.pad(t, pad, value=value))
    return torch.cat(padded, dim=0)


def merge_rounds(outputs: list[dict[str, Any]], rows: torch.Tensor, pad_id: int) -> dict[str, Any]:
    """Concatenate per-round TRL batches (re-padding to a common width) and keep ``rows`` in that order."""
    merged: dict[str, Any] = {}
    for key, first in outputs[0].items():
        if key == "num_items_in_batch":
            continue
        if not isinstance(first, torch.Tensor) or first.dim() == 0:
            raise TrainingError(f"dynamic sampling cannot merge batch field {key!r} (multimodal input?)")
        if first.dim() == 1:
            merged[key] = torch.cat([o[key] for o in outputs])[rows]
        else:
            value = pad_id if key.endswith("_ids") else 0
            merged[key] = _pad_cat([o[key] for o in outputs], key.startswith("prompt"), value)[rows]
    return merged


def first_of_group(group_ids: torch.Tensor) -> torch.Tensor:
    """True at the first row of each distinct group id (the SFT term's one row per prompt)."""
    seen: set[int] = set()
    first = []
    for gid in group_ids.tolist():
        first.append(gid not in seen)
        seen.add(gid)
    return torch.tensor(first, dtype=torch.bool)
