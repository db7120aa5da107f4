"""The frozen inputs and outputs of the reward functions."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class StepContext:
    """Everything a reward layer may look at for one policy step.

    ``action`` is the parsed policy action (``actions.parse_output``); ``expert_action`` the expert's action at
    the same step. ``instance_id``, ``trajectory_hash`` and ``step`` (0-based index of the target step) locate the
    expert state the effect layer restores; they are None when scoring offline pairs.
    ``executables`` are the command names the instance image can run (None: ``commands.DEFAULT_EXECUTABLES``);
    ``created_files`` the repository paths earlier steps created (None: unknown), so ``./reproduce.sh`` is known.
    """

    expert_action: str
    action: str
    thought: str = ""
    instance_id: str | None = None
    trajectory_hash: str | None = None
    step: int | None = None
    executables: frozenset[str] | None = None
    created_files: frozenset[str] | None = None


@dataclass(frozen=True)
class RewardResult:
    """One reward: ``total`` (−1 on a format error), every computed layer in ``components``, the format error."""

    total: float
    components: dict[str, float] = field(default_factory=dict)
    format_error: str | None = None
