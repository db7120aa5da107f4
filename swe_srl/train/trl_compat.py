"""The one place that touches TRL's private API, behind a version check.

``SRLGRPOTrainer`` (dynamic sampling, the rloo advantage, reward-layer metrics, the SFT term) needs three of
``trl.GRPOTrainer``'s internals: ``_generate_and_score_completions`` (one generate + score pass → the batch dict),
``_calculate_rewards`` (rewards per function) and ``_metrics`` (the logged means). They are private, so they change
between TRL releases without notice: only the tested range is accepted (``trl_options.TESTED_TRL``, the same
range as pyproject's ``trl`` pin), checked before any work (``load_config``) and again when a trainer is built. Set ``SWE_SRL_ANY_TRL=1`` to try
another version anyway (at your own risk: a mismatch then fails inside a training step).
"""

from __future__ import annotations

from typing import Any

import torch
from trl import GRPOTrainer

from swe_srl.train.trl_options import check_trl_version


class TRLHooks(GRPOTrainer):
    """``GRPOTrainer`` with its private steps turned into named hooks for :class:`~swe_srl.train.trainer.SRLGRPOTrainer`.

    Hooks: :meth:`on_rewards` (after each reward pass), :meth:`train_batch` (builds the training batch; may call
    :meth:`generate_and_score` several times), :meth:`record_metric`.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        check_trl_version()
        super().__init__(*args, **kwargs)

    # -- hooks for the subclass ---------------------------------------------------------------------------------
    def on_rewards(self, rewards_per_func: torch.Tensor, completions: list, mode: str) -> None:
        """Called with every reward pass's (gathered) rewards per function."""

    def train_batch(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        """The training batch for ``inputs`` (rows, each repeated ``num_generations`` times)."""
        return self.generate_and_score(inputs)

    def generate_and_score(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        """TRL's generate + score pass: ``prompt_ids``, ``completion_ids``, masks, ``advantages``, logps."""
        return super()._generate_and_score_completions(inputs)

    def record_metric(self, name: str, value: float, mode: str = "train") -> None:
        """Add one value to TRL's logged metric ``name`` (averaged per logging step)."""
        self._metrics[mode][name].append(float(value))

    def reward_weight_vector(self) -> torch.Tensor:
        """TRL's ``reward_weights`` (one per reward function)."""
        return self.reward_weights

    # -- TRL internals (1.16) -----------------------------------------------------------------------------------
    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):  # type: ignore[override]
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self.on_rewards(rewards_per_func, completions, "train" if self.model.training else "eval")
        return rewards_per_func

    def _generate_and_score_completions(self, inputs):  # type: ignore[override]
        if not self.model.training:
            return super()._generate_and_score_completions(inputs)
        return self.train_batch(inputs)
