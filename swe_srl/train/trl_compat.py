"""The one place that touches TRL's private API, behind a version check.

``SRLGRPOTrainer`` (dynamic sampling, the rloo advantage, reward-layer metrics, the SFT term, shared prompts) needs
four of ``trl.GRPOTrainer``'s internals: ``_generate_and_score_completions`` (one generate + score pass → the batch
dict), ``_calculate_rewards`` (rewards per function), ``_get_per_token_logps_and_entropies`` (every policy and
reference forward) and ``_metrics`` (the logged means). They are private, so they change
between TRL releases without notice: only the tested range is accepted (``trl_options.TESTED_TRL``, the same
range as pyproject's ``trl`` pin), checked before any work (``load_config``) and again when a trainer is built. Set ``SWE_SRL_ANY_TRL=1`` to try
another version anyway (at your own risk: a mismatch then fails inside a training step).
"""

from __future__ import annotations

from typing import Any

import torch
from trl import GRPOTrainer

from swe_srl.train.shared_prompt import prompt_groups, share_generation_prefill, shared_prompt_logps
from swe_srl.train.trl_options import check_trl_version


def checkpointing(model: torch.nn.Module) -> bool:
    """Whether ``model`` recomputes activations in backward (transformers 5's name first, then 4's)."""
    for name in ("is_activation_checkpointing", "is_gradient_checkpointing"):
        if hasattr(type(model), name):
            return bool(getattr(model, name))
    return bool(getattr(model, "is_gradient_checkpointing", False))


class TRLHooks(GRPOTrainer):
    """``GRPOTrainer`` with its private steps turned into named hooks for :class:`~swe_srl.train.trainer.SRLGRPOTrainer`.

    Hooks: :meth:`on_rewards` (after each reward pass), :meth:`train_batch` (builds the training batch; may call
    :meth:`generate_and_score` several times), :meth:`record_metric`. ``shared_prompts``: run each group's prompt
    once in every forward and in generation (:mod:`swe_srl.train.shared_prompt`; one process only).
    """

    def __init__(self, *args: Any, shared_prompts: bool = True, **kwargs: Any) -> None:
        check_trl_version()
        super().__init__(*args, **kwargs)
        self.shared_prompts = shared_prompts and self.accelerator.num_processes == 1
        if self.shared_prompts and not self.use_vllm:
            share_generation_prefill(self.model)

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

    def _get_per_token_logps_and_entropies(  # type: ignore[override]
        self,
        model,
        input_ids,
        attention_mask,
        logits_to_keep,
        batch_size=None,
        compute_entropy=False,
        **kwargs,
    ):
        shared = self.shared_prompts and not any(v is not None and v is not False for v in kwargs.values())
        if shared and torch.is_grad_enabled():  # a checkpointed forward keeps no cache
            shared = not checkpointing(self.accelerator.unwrap_model(model))
        if not shared:
            return super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy, **kwargs
            )
        batch_size = batch_size or input_ids.size(0)
        logps, entropies = [], []
        for start in range(0, input_ids.size(0), batch_size):
            ids, mask = input_ids[start : start + batch_size], attention_mask[start : start + batch_size]
            groups = prompt_groups(ids[:, :-logits_to_keep], mask[:, :-logits_to_keep])
            out = None
            if groups is not None and ids.size(1) - logits_to_keep >= 2:
                with self.accelerator.autocast():
                    out = shared_prompt_logps(model, ids, mask, logits_to_keep, groups)
            if out is None:
                out = super()._get_per_token_logps_and_entropies(
                    model, ids, mask, logits_to_keep, None, compute_entropy
                )[:2]
            logps.append(out[0])
            entropies.append(out[1])
        entropy = torch.cat(entropies) if compute_entropy and all(e is not None for e in entropies) else None
        return torch.cat(logps), entropy, None

    def _generate_and_score_completions(self, inputs):  # type: ignore[override]
        if not self.model.training:
            return super()._generate_and_score_completions(inputs)
        return self.train_batch(inputs)
