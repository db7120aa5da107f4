"""The effect layer's interface (:class:`EffectEvaluator`) and its modes. The implementation: ``score.py`` (the
definition — the action's change against the expert's change from the same state, pure), ``container.py`` (a warm
container reset to an expert state between evaluations) and ``evaluator.py`` (``SandboxEffect``: states, caches,
test runs). Edited Python files are checked after execution with :func:`swe_srl.rewards.syntax.check_python_files`.
docs/rewards.md "Effect".
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from swe_srl.rewards.context import StepContext

EffectMode = Literal["off", "cached", "full"]
EFFECT_MODES: tuple[str, ...] = ("off", "cached", "full")


@runtime_checkable
class EffectEvaluator(Protocol):
    """Scores how much of the expert's change the action reproduces (and that it harms nothing), ∈ [0, 1].

    Needs ``ctx.instance_id``, ``ctx.trajectory_hash`` and ``ctx.step`` to restore the expert state; raises a
    ``SandboxError`` on infrastructure failure (never returns 0 for one).
    """

    def __call__(self, ctx: StepContext) -> float: ...
