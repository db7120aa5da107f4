"""Shared prompts: each group's prompt runs through the model once, its KV cache serves the group's completions.

GRPO samples ``num_generations`` completions per prompt, so a batch holds every prompt that many times, and with
long prompts and short actions nearly all of a forward is the same prompt again. Here the distinct prompts
(left-padded rows, equal ids and mask) run once (``prefix``: all prompt tokens but the last), the cache is
expanded to the batch's rows, and only the last prompt token plus the completion run per row. Causal attention makes
this the same computation: every position attends to the same keys and values at the same positions (rows keep
their padding), so log-probabilities, entropies and gradients equal the full forward's up to float rounding, and
the gradient reaches the prompt through the shared cache. Generation is shared the same way: the distinct prompts
are prefilled and ``generate`` continues from the expanded cache with the positions it would have used.

The trainer uses it for every forward of one process (``shared_prompts``, on by default) and keeps TRL's full
forward where it cannot apply: several processes (DDP/FSDP wrap the model), gradient checkpointing with gradients
(no cache is kept), a static or compiled cache in generation, multimodal inputs, no repeated prompt.
"""

from __future__ import annotations

import functools
import inspect
import types
from typing import Any

import torch


def prompt_groups(
    input_ids: torch.Tensor, attention_mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(first row of each distinct prompt, each row's distinct-prompt index), or None when no row repeats."""
    key = torch.cat([input_ids, attention_mask.to(input_ids.dtype)], dim=1)
    distinct, inverse = torch.unique(key, dim=0, return_inverse=True)
    if distinct.size(0) == key.size(0):
        return None
    rows = torch.arange(key.size(0), device=key.device)
    first = torch.full((distinct.size(0),), key.size(0), dtype=torch.long, device=key.device)
    first.scatter_reduce_(0, inverse, rows, reduce="amin", include_self=True)
    return first, inverse


def _cache_key(model: torch.nn.Module) -> str:
    """The forward's cache argument: ``cache`` (transformers ≥ 5.2x) or ``past_key_values``."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return _cache_key_of(type(base))


@functools.cache
def _cache_key_of(model_type: type) -> str:
    """:func:`_cache_key` once per model class (not on every forward and every ``generate``)."""
    params = inspect.signature(model_type.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _cache_of(output: Any) -> Any:
    cache = getattr(output, "cache", None)
    return cache if cache is not None else getattr(output, "past_key_values", None)


def prefill(model, input_ids, attention_mask, position_ids=None):
    """The KV cache of ``input_ids`` (distinct prompts), or None when the model keeps none."""
    out = model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=position_ids,
        use_cache=True,
        logits_to_keep=1,
    )
    return _cache_of(out)


def shared_prompt_logps(
    model, input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int, groups
) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """Per-token log-probabilities (and entropies, where the model's fused head computes them) of the last
    ``logits_to_keep`` tokens, as TRL's fused-head forward gives them; None when the model kept no cache."""
    first, inverse = groups
    prompt_len = input_ids.size(1) - logits_to_keep
    cache = prefill(model, input_ids[first, : prompt_len - 1], attention_mask[first, : prompt_len - 1])
    if cache is None:
        return None
    cache.batch_select_indices(inverse)
    suffix = input_ids[:, prompt_len - 1 :]
    labels = suffix.masked_fill(attention_mask[:, prompt_len - 1 :] == 0, -100)
    labels[:, 0] = -100  # the last prompt token is only the first completion token's context
    out = model(
        input_ids=suffix, attention_mask=attention_mask, labels=labels, fused_lm_head=True,
        **{_cache_key(model): cache},
    )  # fmt: skip
    return out.log_probs, out.entropy


def share_generation_prefill(model: torch.nn.Module) -> None:
    """Make ``model.generate`` prefill each distinct prompt once (a method bound to this instance, so a deep copy
    binds its copy; idempotent).

    Applies only to a dynamic cache: a call that names a cache or sets ``cache_implementation`` (a static, compiled
    cache) goes to the model's own ``generate`` unchanged.
    """
    if getattr(model.generate, "_shared_prefill", False):
        return
    model.generate = types.MethodType(_shared_generate, model)  # type: ignore[method-assign]


def _shared_generate(model: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
    generate = functools.partial(type(model).generate, model)
    key = _cache_key(model)
    ids, mask = kwargs.get("input_ids"), kwargs.get("attention_mask")
    config = kwargs.get("generation_config") or model.generation_config
    if args or ids is None or mask is None or key in kwargs or ids.size(1) < 2:
        return generate(*args, **kwargs)
    if getattr(config, "cache_implementation", None):  # static (compiled) caches are sized by generate
        return generate(*args, **kwargs)
    groups = prompt_groups(ids, mask)
    if groups is None:
        return generate(*args, **kwargs)
    first, inverse = groups
    head, head_mask = ids[first, :-1], mask[first, :-1]
    positions = head_mask.long().cumsum(-1) - 1  # generate's positions for left-padded rows
    positions.masked_fill_(head_mask == 0, 1)
    with torch.no_grad():
        cache = prefill(model, head, head_mask, positions)
    if cache is None:
        return generate(*args, **kwargs)
    cache.batch_select_indices(inverse)
    return generate(*args, **kwargs, **{key: cache})


_shared_generate._shared_prefill = True  # type: ignore[attr-defined]
