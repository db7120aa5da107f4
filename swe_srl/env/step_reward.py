"""The env's step-wise rewards (``srl`` / ``layered``): an output scored against the expert action it stands for.

:class:`SWEEnv` compares env step ``t`` with expert step ``k = step + t`` of the trajectory its episode was reset
with; this module holds that comparison and its inputs (the syntax layer's executables and created files, the
sandboxed effect layer) so the env itself keeps only the episode's lifecycle.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from swe_srl.rewards import score_output
from swe_srl.rewards.effect.evaluator import SandboxEffect
from swe_srl.rewards.syntax_inputs import step_inputs

if TYPE_CHECKING:
    from swe_srl.benchmark.instances import Instance
    from swe_srl.trajectories.schema import Trajectory


class ExpertStepReward:
    """Scores an output against expert step ``k`` under ``mode`` (``srl`` or ``layered``, with ``weights`` and
    ``effect_mode``); the sandboxed effect evaluator starts on first use and is kept for the env's lifetime."""

    def __init__(
        self, mode: str, *, weights: dict[str, float] | None, effect_mode: str, repos_dir: Path | None
    ) -> None:
        self.mode, self.weights, self.effect_mode, self.repos_dir = mode, weights, effect_mode, repos_dir
        self._effect_eval: SandboxEffect | None = None

    def score(
        self, text: str, action: str, instance: Instance, trajectory: Trajectory, k: int, info: dict[str, Any]
    ) -> float:
        """The reward of ``text`` (whose parsed action is ``action``) at expert step ``k``; fills
        ``info["reward_components"]`` and ``info["expert_action"]``. Past the expert's last step: 0.0."""
        if k >= len(trajectory.steps):
            info["reward_components"] = {"beyond_expert": 1.0}
            return 0.0
        expert = trajectory.steps[k].action
        result = score_output(
            text,
            expert,
            mode=self.mode,
            weights=self.weights,
            effect=self._effect(instance, trajectory, k, action),
            **self._syntax_inputs(instance, trajectory, k),
        )
        info["reward_components"] = dict(result.components)
        info["expert_action"] = expert
        return float(result.total)

    def _syntax_inputs(self, instance: Instance, trajectory: Trajectory, k: int) -> dict[str, frozenset[str]]:
        """The syntax layer's inputs for expert step ``k`` (layered mode): the instance image's executables and the
        files the expert's steps before ``k`` created."""
        if self.mode != "layered":
            return {}
        executables, created = step_inputs(instance, trajectory, k, repos_dir=self.repos_dir)
        return {"executables": executables, "created_files": created}

    def _effect(self, instance: Instance, trajectory: Trajectory, k: int, action: str) -> float | None:
        """The effect layer (layered mode, effect_mode cached/full): the action run on the expert state before k."""
        if self.effect_mode == "off" or self.mode != "layered":
            return None
        if self._effect_eval is None:
            self._effect_eval = SandboxEffect(self.effect_mode, repos_dir=self.repos_dir)
        return self._effect_eval.evaluate(instance, trajectory, k, action).value
