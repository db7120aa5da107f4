"""The effect layer's interface. The sandbox-backed implementation (restore the expert state before step k, run the
action, compare trees, else target-test outcomes; cached by (instance, tree hash)) lives with the environment.

The implementation should also check the Python files the action edited, after execution, with
:func:`swe_srl.rewards.syntax.check_python_files` (paths from :func:`swe_srl.rewards.syntax.edited_python_paths`
or the sandbox diff).
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from swe_srl.rewards.context import StepContext

EffectMode = Literal["off", "cached", "full"]
EFFECT_MODES: tuple[str, ...] = ("off", "cached", "full")


@runtime_checkable
class EffectEvaluator(Protocol):
    """Scores how much of the expert's effect the action reproduces, ∈ [0, 1].

    Needs ``ctx.instance_id``, ``ctx.trajectory_hash`` and ``ctx.step`` to restore the expert state; raises a
    ``SandboxError`` on infrastructure failure (never returns 0 for one).
    """

    def __call__(self, ctx: StepContext) -> float: ...
