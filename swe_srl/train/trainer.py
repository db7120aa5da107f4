"""GRPO with dynamic sampling and a choice of advantage, as a thin ``trl.GRPOTrainer`` subclass (no fork).

Per step: TRL generates and scores a batch; we recompute the advantages from the same rewards (``grpo`` or
``rloo``), drop groups whose reward std ≤ epsilon, and refill the batch with groups generated for other prompts
(up to ``max_rounds`` generation rounds). Dropped groups and infra failures (every reward None/NaN) that still fill a
slot get advantage 0 *and* an all-zero completion mask, so they contribute no gradient at all (not even KL).
"""

from __future__ import annotations

from typing import Any

import torch
from trl import GRPOTrainer

from swe_srl.core.actions import THINK_OPEN, parse_output
from swe_srl.errors import ActionFormatError, TrainingError
from swe_srl.train.config import DynamicSampling


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


def compute_advantages(rewards: torch.Tensor, num_generations: int, kind: str) -> torch.Tensor:
    """Advantages per sample; NaN rewards (infra failures) get 0 and are left out of their group's baseline.

    ``grpo``: (r − group mean) / (group std + 1e-4). ``rloo``: r − mean of the other scored rewards of the group.
    """
    count, mean, std = group_stats(rewards, num_generations)
    grouped = rewards.view(-1, num_generations)
    if kind == "grpo":
        adv = (grouped - mean.unsqueeze(1)) / (std.unsqueeze(1) + 1e-4)
    elif kind == "rloo":
        total = torch.nansum(grouped, dim=1, keepdim=True)
        others = (count - 1).clamp(min=1).unsqueeze(1)
        adv = grouped - (total - grouped) / others
        adv = torch.where((count >= 2).unsqueeze(1), adv, torch.zeros_like(adv))
    else:
        raise TrainingError(f"unknown advantage {kind!r}: use 'grpo' or 'rloo'")
    return torch.nan_to_num(adv, nan=0.0).reshape(-1)


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


def _completion_text(completion: Any) -> str:
    if isinstance(completion, list):
        return "".join(
            str(m.get("content", "")) for m in completion if m.get("role", "assistant") == "assistant"
        )
    return str(completion)


def format_ok(completion: Any, prefix: str = "") -> bool:
    """Whether a completion (string or conversational) follows the think + one action format."""
    try:
        parse_output(prefix + _completion_text(completion))
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


class PrefixedReward:
    """Wraps a reward function for chat templates whose generation prompt already opens ``<think>``.

    The prefix the template wrote is put back in front of each completion before scoring, so format rules see the
    whole model turn. Picklable; exposes the wrapped function's ``last_components``.
    """

    def __init__(self, inner: Any, prefix: str = THINK_OPEN) -> None:
        self.inner = inner
        self.prefix = prefix
        self.__name__ = getattr(inner, "__name__", type(inner).__name__)

    @property
    def last_components(self) -> list[dict[str, float]]:
        return getattr(self.inner, "last_components", [])

    @property
    def last_format_errors(self) -> list[str | None] | None:
        return getattr(self.inner, "last_format_errors", None)

    def _prefixed(self, completion: Any) -> Any:
        if isinstance(completion, list):
            return [
                {**m, "content": self.prefix + m["content"]} if m.get("role") == "assistant" else m
                for m in completion
            ]
        return self.prefix + completion

    def __call__(self, prompts: list, completions: list, **columns: Any) -> list[float | None]:
        return self.inner(prompts, [self._prefixed(c) for c in completions], **columns)


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


class SRLGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` + dynamic sampling, grpo/rloo advantages and format / reward-layer metrics."""

    def __init__(
        self,
        *args: Any,
        advantage: str = "grpo",
        dynamic_sampling: DynamicSampling | None = None,
        format_prefix: str = "",
        fast_generation: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        idempotent_input_grad_hooks(self.model)
        if fast_generation and torch.cuda.is_available() and self._fast_generation_ok():
            enable_fast_generation(self.generation_config)
        if advantage not in ("grpo", "rloo"):
            raise TrainingError(f"unknown advantage {advantage!r}: use 'grpo' or 'rloo'")
        self.advantage = advantage
        self.dynamic_sampling = dynamic_sampling or DynamicSampling(enabled=False)
        self.format_prefix = format_prefix
        self._last_rewards: torch.Tensor | None = None
        gen = torch.Generator().manual_seed(self.args.seed + self.accelerator.process_index)
        self._refill_gen = gen
        self._refill_order: list[int] = []

    def _fast_generation_ok(self) -> bool:
        """transformers' ``generate`` path only; not fp32 weights under bf16/fp16 autocast.

        With fp32 weights under autocast, keys leave the rotary embedding in fp32 and values in bf16, and the static
        cache (transformers 5.17) sizes itself from the keys: ``index_copy_`` then fails on the values.
        """
        if self.use_vllm or getattr(self, "use_transformers_continuous_batching", False):
            return False
        autocast = self.args.bf16 or self.args.fp16
        return not (autocast and next(self.model.parameters()).dtype == torch.float32)

    # -- rewards and metrics ------------------------------------------------------------------------------------
    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):  # type: ignore[override]
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        mode = "train" if self.model.training else "eval"
        weighted = (rewards_per_func * self.reward_weights.to(rewards_per_func.device).unsqueeze(0)).nansum(
            dim=1
        )
        weighted[torch.isnan(rewards_per_func).all(dim=1)] = torch.nan
        self._last_rewards = weighted
        ok = _format_flags(self.reward_funcs, completions, self.format_prefix)
        self._metrics[mode]["format_compliance"].append(sum(ok) / max(len(ok), 1))
        for func in self.reward_funcs:
            components = getattr(func, "last_components", None) or []
            for key in sorted({k for c in components for k in c}):
                values = [c[key] for c in components if key in c]
                self._metrics[mode][f"reward_components/{key}"].append(sum(values) / len(values))
        return rewards_per_func

    # -- dynamic sampling ---------------------------------------------------------------------------------------
    def _refill_inputs(self, num_prompts: int) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        dataset = self.train_dataset
        for _ in range(num_prompts):
            if not self._refill_order:
                self._refill_order = torch.randperm(len(dataset), generator=self._refill_gen).tolist()
            row = dataset[self._refill_order.pop()]
            rows.extend(dict(row) for _ in range(self.num_generations))
        return rows

    def _score_round(self, inputs: list[dict[str, Any]]) -> tuple[dict[str, Any], torch.Tensor, torch.Tensor]:
        """One TRL generate+score pass; returns (batch, local keep-per-sample, global kept-group count)."""
        out = super()._generate_and_score_completions(inputs)
        rewards = self._last_rewards
        if rewards is None:
            raise TrainingError("no rewards were computed for the batch")
        G = self.num_generations
        if self.dynamic_sampling.enabled:
            keep_groups = group_keep_mask(rewards, G, self.dynamic_sampling.epsilon)
        else:
            keep_groups = torch.ones(rewards.numel() // G, dtype=torch.bool, device=rewards.device)
        keep = keep_groups.repeat_interleave(G) & ~torch.isnan(rewards)
        adv = compute_advantages(rewards, G, self.advantage) * keep
        local = slice(
            self.accelerator.process_index * len(inputs), (self.accelerator.process_index + 1) * len(inputs)
        )
        out["advantages"] = adv[local].to(out["advantages"].dtype)
        out["completion_mask"] = out["completion_mask"] * keep[local].unsqueeze(1).to(
            out["completion_mask"].dtype
        )
        return out, keep[local], keep_groups

    def _generate_and_score_completions(self, inputs):  # type: ignore[override]
        if not self.model.training:
            return super()._generate_and_score_completions(inputs)
        G, n_local = self.num_generations, len(inputs)
        rounds = 1 if self.accelerator.num_processes > 1 and n_local % G else self.dynamic_sampling.max_rounds
        outputs, keeps, sampled, kept = [], [], 0, 0
        batch = inputs
        for _ in range(rounds if self.dynamic_sampling.enabled else 1):
            out, keep, keep_groups = self._score_round(batch)
            outputs.append(out)
            keeps.append(keep)
            sampled += keep_groups.numel()
            kept += int(keep_groups.sum())
            if kept * G >= n_local * self.accelerator.num_processes:
                break
            batch = self._refill_inputs(n_local // G)
        all_keep = torch.cat(keeps)
        order = torch.cat([torch.nonzero(all_keep).flatten(), torch.nonzero(~all_keep).flatten()])[:n_local]
        merged = merge_rounds(outputs, order, self.processing_class.pad_token_id)
        loss_mask = merged["completion_mask"] * merged.get("tool_mask", 1)
        merged["num_items_in_batch"] = self.accelerator.gather(loss_mask.sum()).sum()
        metrics = self._metrics["train"]
        metrics["dynamic_sampling/kept_ratio"].append(kept / max(sampled, 1))
        metrics["dynamic_sampling/rounds"].append(float(len(outputs)))
        metrics["dynamic_sampling/filled_ratio"].append(float(all_keep[order].float().mean()))
        return merged
