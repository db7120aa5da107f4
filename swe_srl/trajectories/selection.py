"""Which imported trajectories to keep: the resolved ones, one expert model's (``swe-srl trajectories import
--resolved-only --model NAME``), as the SRL paper keeps SWE-smith's resolved claude-3.7 trajectories."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from swe_srl.trajectories.schema import Trajectory


def select(
    trajectories: Sequence[Trajectory], *, resolved_only: bool = False, model: str | None = None
) -> tuple[list[Trajectory], Counter[str]]:
    """(the trajectories kept, in order; the others counted by reason: ``not resolved`` for ``resolved`` other than
    True, ``model`` for ``metadata["model"]`` other than ``model``)."""
    kept: list[Trajectory] = []
    skipped: Counter[str] = Counter()
    for traj in trajectories:
        if resolved_only and traj.resolved is not True:
            skipped["not resolved"] += 1
        elif model is not None and traj.metadata.get("model") != model:
            skipped["another model"] += 1
        else:
            kept.append(traj)
    return kept, skipped
