"""GRPO with dynamic sampling, a choice of advantage and an auxiliary SFT term, as a thin ``trl.GRPOTrainer``
subclass (no fork; TRL's private steps are reached only through :mod:`swe_srl.train.trl_compat`).

Per step: TRL generates and scores a batch. ``grpo`` keeps TRL's advantages (so ``trl.scale_rewards`` and
``trl.multi_objective_aggregation`` act as in TRL); ``rloo`` replaces them with the leave-one-out baseline (scaled
only when ``trl.scale_rewards`` is set). Groups whose reward std ≤ epsilon are dropped and the batch is refilled
with groups generated for other prompts, only as many as are still missing, up to ``max_rounds`` generation rounds.
Dropped groups and infra failures (every reward None/NaN) that still fill a slot get advantage 0 *and* an all-zero
completion mask, so they contribute no gradient at all (not even KL). With ``sft_weight`` λ > 0 the loss gains
λ · NLL of the expert action (:mod:`swe_srl.train.sft`), once per prompt in the batch; with ``replay_weight`` > 0
also on train samples drawn uniformly each step (the anchor: :mod:`swe_srl.train.anchor`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from swe_srl.core.actions import parse_output
from swe_srl.core.view import PLAIN, PlainView
from swe_srl.errors import ActionFormatError, TrainingError
from swe_srl.paths import atomic_write_text
from swe_srl.rewards.trl import completion_text
from swe_srl.train.anchor import AnchorSampler, ShuffledPasses
from swe_srl.train.groups import first_of_group, group_keep_mask, merge_rounds, rloo_advantages
from swe_srl.train.options import DynamicSampling
from swe_srl.train.sft import completion_nll, expert_turn, target_batch
from swe_srl.train.trl_compat import TRLHooks


def enable_fast_generation(generation_config: Any, *, all_devices: bool = False) -> None:
    """Static KV cache + transformers' auto-compiled decoding step (inductor, CUDA graphs) in ``generate``.

    TRL builds its GenerationConfig with ``disable_compile=True``; this turns compilation back on. Only the one-token
    decoding step is compiled (prefill stays eager), once per cache shape. ``all_devices`` compiles on CPU too,
    which only tests can want.
    """
    from transformers import CompileConfig

    compile_config = CompileConfig()  # inductor, mode="reduce-overhead" (CUDA graphs; plain inductor on CPU)
    compile_config._compile_all_devices = all_devices or None
    generation_config.cache_implementation = "static"
    generation_config.disable_compile = False
    generation_config.compile_config = compile_config


def idempotent_input_grad_hooks(model: torch.nn.Module) -> None:
    """Make ``enable_input_require_grads`` replace its embedding hook instead of adding one more.

    TRL turns gradient checkpointing off around generation and back on after it, twice a step; each
    ``gradient_checkpointing_enable`` registers another forward hook on the input embeddings and (outside PEFT)
    nothing removes them. The growing hook count costs a little on every forward and makes torch.compile's guard on
    it fail: the compiled decoding step was recompiled at every training step.
    """
    from transformers import PreTrainedModel

    for module in model.modules():
        if isinstance(module, PreTrainedModel) and "enable_input_require_grads" not in vars(module):
            enable, disable = module.enable_input_require_grads, module.disable_input_require_grads

            def replace(enable: Any = enable, disable: Any = disable) -> None:
                disable()
                enable()

            module.enable_input_require_grads = replace  # type: ignore[method-assign]


def format_ok(completion: Any, prefix: str = "") -> bool:
    """Whether a completion (string or conversational) follows the think + one action format."""
    try:
        parse_output(prefix + completion_text(completion))
    except ActionFormatError:
        return False
    return True


def _format_flags(reward_funcs: list, completions: list, prefix: str) -> list[bool]:
    """Format compliance per completion: the reward function's own parse when it kept one, else a parse here."""
    for func in reward_funcs:
        errors = getattr(func, "last_format_errors", None)
        if errors is not None and len(errors) == len(completions):
            return [error is None for error in errors]
    return [format_ok(c, prefix) for c in completions]


class SRLGRPOTrainer(TRLHooks):
    """``GRPOTrainer`` + dynamic sampling, grpo/rloo advantages, the SFT term and format / reward-layer metrics."""

    def __init__(
        self,
        *args: Any,
        advantage: str = "grpo",
        dynamic_sampling: DynamicSampling | None = None,
        format_prefix: str = "",
        fast_generation: bool = True,
        rloo_scale: str = "none",
        sft_weight: float = 0.0,
        replay_weight: float = 0.0,
        replay_batch: int = 4,
        sft_thought: bool = True,
        model_card: Callable[[], str] | None = None,
        view: PlainView = PLAIN,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        idempotent_input_grad_hooks(self.model)
        if fast_generation and torch.cuda.is_available() and self._fast_generation_ok():
            enable_fast_generation(self.generation_config)
        if advantage not in ("grpo", "rloo"):
            raise TrainingError(f"unknown advantage {advantage!r}: use 'grpo' or 'rloo'")
        self.advantage, self.rloo_scale, self.sft_weight = advantage, rloo_scale, sft_weight
        self.dynamic_sampling = dynamic_sampling or DynamicSampling(enabled=False)
        self.format_prefix = format_prefix
        self.model_card = model_card
        self.view = view
        self._last_rewards: torch.Tensor | None = None
        seed = self.args.seed + self.accelerator.process_index
        self._refill = ShuffledPasses(len(self.train_dataset), seed)
        self.replay_weight, self.sft_thought = replay_weight, sft_thought
        self._anchor = None
        if replay_weight > 0:
            self._anchor = AnchorSampler(
                self.train_dataset, replay_batch, seed + 7919, self.processing_class,
                prefix=self.format_prefix, max_tokens=self.max_completion_length, thought=sft_thought, view=view,
            )  # fmt: skip

    def _fast_generation_ok(self) -> bool:
        """transformers' ``generate`` path only; not fp32 weights under bf16/fp16 autocast.

        With fp32 weights under autocast, keys leave the rotary embedding in fp32 and values in bf16, and the static
        cache (transformers 5.17) sizes itself from the keys: ``index_copy_`` then fails on the values.
        """
        if self.use_vllm or getattr(self, "use_transformers_continuous_batching", False):
            return False
        if self.args.cache_implementation is not None:  # the run chose its cache: trl.cache_implementation
            return False
        autocast = self.args.bf16 or self.args.fp16
        return not (autocast and next(self.model.parameters()).dtype == torch.float32)

    # -- rewards and metrics ------------------------------------------------------------------------------------
    def on_rewards(self, rewards_per_func: torch.Tensor, completions: list, mode: str) -> None:
        weights = self.reward_weight_vector().to(rewards_per_func.device).unsqueeze(0)
        weighted = (rewards_per_func * weights).nansum(dim=1)
        weighted[torch.isnan(rewards_per_func).all(dim=1)] = torch.nan
        self._last_rewards = weighted
        ok = _format_flags(self.reward_funcs, completions, self.format_prefix)
        self.record_metric("format_compliance", sum(ok) / max(len(ok), 1), mode)
        for func in self.reward_funcs:
            components = getattr(func, "last_components", None) or []
            for key in sorted({k for c in components for k in c}):
                values = [c[key] for c in components if key in c]
                self.record_metric(f"reward_components/{key}", sum(values) / len(values), mode)

    # -- dynamic sampling ---------------------------------------------------------------------------------------
    def _refill_inputs(self, num_prompts: int) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for _ in range(num_prompts):
            row = self.train_dataset[self._refill.next()]
            rows.extend(dict(row) for _ in range(self.num_generations))
        return rows

    def refill_state(self) -> dict[str, Any]:
        """The refill random state (generator + the rest of the current permutation), for checkpoints."""
        state = self._refill.state()
        if self._anchor is not None:
            state["replay"] = self._anchor.state()  # the checkpoint key of the anchor's draws
        return state

    def load_refill_state(self, state: dict[str, Any]) -> None:
        self._refill.load_state(state)
        if self._anchor is not None and "replay" in state:
            self._anchor.load_state(state["replay"])

    def _score_round(self, inputs: list[dict[str, Any]]) -> tuple[dict[str, Any], torch.Tensor, torch.Tensor]:
        """One TRL generate+score pass; returns (batch, local keep-per-sample, global kept-group count)."""
        out = self.generate_and_score(inputs)
        rewards = self._last_rewards
        if rewards is None:
            raise TrainingError("no rewards were computed for the batch")
        G = self.num_generations
        if self.dynamic_sampling.enabled:
            keep_groups = group_keep_mask(rewards, G, self.dynamic_sampling.epsilon)
        else:
            keep_groups = torch.ones(rewards.numel() // G, dtype=torch.bool, device=rewards.device)
        keep = keep_groups.repeat_interleave(G) & ~torch.isnan(rewards)
        local = slice(
            self.accelerator.process_index * len(inputs), (self.accelerator.process_index + 1) * len(inputs)
        )
        if self.advantage == "rloo":
            out["advantages"] = rloo_advantages(rewards, G, self.rloo_scale)[local].to(
                out["advantages"].dtype
            )
        out["advantages"] = out["advantages"] * keep[local].to(
            out["advantages"].device, out["advantages"].dtype
        )
        out["completion_mask"] = out["completion_mask"] * keep[local].unsqueeze(1).to(
            out["completion_mask"].dtype
        )
        return out, keep[local], keep_groups

    def train_batch(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        G, n_local, procs = self.num_generations, len(inputs), self.accelerator.num_processes
        rounds = 1 if procs > 1 and n_local % G else self.dynamic_sampling.max_rounds
        outputs, keeps, rows, groups, sampled, kept = [], [], [], [], 0, 0
        batch = inputs
        rounds = rounds if self.dynamic_sampling.enabled else 1
        for round_index in range(rounds):
            out, keep, keep_groups = self._score_round(batch)
            outputs.append(out)
            keeps.append(keep)
            rows.extend(batch)
            first = self.accelerator.process_index * len(batch)  # this process's rows in the gathered round
            groups += [round_index * 10**9 + (first + j) // G for j in range(len(batch))]
            sampled += keep_groups.numel()
            kept += int(keep_groups.sum())
            missing = n_local * procs - kept * G
            if missing <= 0 or round_index == rounds - 1:
                break
            # only the groups still missing (the same count on every process: it comes from gathered rewards)
            batch = self._refill_inputs(math.ceil(math.ceil(missing / G) / procs))
        all_keep = torch.cat(keeps)
        order = torch.cat([torch.nonzero(all_keep).flatten(), torch.nonzero(~all_keep).flatten()])[:n_local]
        merged = merge_rounds(outputs, order, self.processing_class.pad_token_id)
        loss_mask = merged["completion_mask"] * merged.get("tool_mask", 1)
        merged["num_items_in_batch"] = self.accelerator.gather(loss_mask.sum()).sum()
        if self.sft_weight > 0:
            picked = order.tolist()
            merged.update(
                self._sft_batch([rows[i] for i in picked], torch.tensor([groups[i] for i in picked]))
            )
        if self._anchor is not None:
            merged.update(self._anchor.batch(n_local, self.accelerator.device))
        self.record_metric("dynamic_sampling/kept_ratio", kept / max(sampled, 1))
        self.record_metric("dynamic_sampling/rounds", len(outputs))
        self.record_metric("dynamic_sampling/filled_ratio", float(all_keep[order].float().mean()))
        self.record_metric("dynamic_sampling/generated_groups", len(rows) / G)
        return merged

    # -- the auxiliary SFT term ---------------------------------------------------------------------------------
    def _sft_batch(self, rows: list[dict[str, Any]], group_ids: torch.Tensor) -> dict[str, Any]:
        """Expert-turn targets for the batch rows (``sft_*``); the SFT loss goes to one row per group (prompt)."""
        tokenizer, pad = self.processing_class, self.processing_class.pad_token_id
        for row in rows:
            if not str(row.get("expert_action") or "").strip():
                raise TrainingError("loss.sft_weight > 0 needs an expert_action in every training row")
        targets = [
            expert_turn(
                tokenizer, row, self.format_prefix, self.max_completion_length, self.sft_thought, self.view
            )
            for row in rows
        ]
        batch = target_batch(targets, pad)
        device = self.accelerator.device
        return {
            "sft_target_ids": batch["target_ids"].to(device),
            "sft_target_mask": batch["target_mask"].to(device),
            "sft_loss_mask": batch["loss_mask"].to(device),
            "sft_row": first_of_group(group_ids).to(device),
        }

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        loss = super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        if not self.model.training:
            return loss
        if self.sft_weight > 0 and "sft_row" in inputs:
            loss = loss + self.sft_weight * self._expert_nll(model, inputs, "sft", "sft/loss")
        if self.replay_weight > 0 and "anchor_row" in inputs:
            loss = loss + self.replay_weight * self._expert_nll(model, inputs, "anchor", "replay/loss")
        return loss

    def _expert_nll(self, model, inputs: dict[str, Any], key: str, metric: str) -> torch.Tensor | float:
        """NLL of the expert targets in the ``{key}_row`` rows, scaled for gradient accumulation (0 when none)."""
        rows = inputs[f"{key}_row"].bool()
        if not rows.any():
            return 0.0
        prompt = "prompt" if key == "sft" else "anchor_prompt"
        nll = completion_nll(
            model,
            inputs[f"{prompt}_ids"][rows],
            inputs[f"{prompt}_mask"][rows],
            inputs[f"{key}_target_ids"][rows],
            inputs[f"{key}_target_mask"][rows],
            inputs[f"{key}_loss_mask"][rows],
        )
        self.record_metric(metric, nll.item())
        return nll / self.current_gradient_accumulation_steps

    # -- model card ---------------------------------------------------------------------------------------------
    def create_model_card(self, model_name=None, dataset_name=None, tags=None):
        """swe-srl's card (``model_card``) in the output directory instead of TRL's template."""
        if self.model_card is None:
            return super().create_model_card(model_name, dataset_name, tags)
        if self.is_world_process_zero():
            atomic_write_text(Path(self.args.output_dir) / "README.md", self.model_card())
        return None
