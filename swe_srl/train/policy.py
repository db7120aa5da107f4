"""The TRL arguments a training stage runs with and what it reads off the policy's chat template (shared by SRL,
``--method sft`` and RLVR). Where the policy comes from: :mod:`swe_srl.train.start`."""

from __future__ import annotations

from swe_srl.core.actions import THINK_OPEN
from swe_srl.errors import ConfigError
from swe_srl.train.schema import TrainConfig


def think_prefix(tokenizer) -> str:
    """``<think>`` when the chat template's generation prompt already opens the think block, else ''."""
    messages = [{"role": "user", "content": "x"}]
    try:
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    except (ValueError, TypeError, AttributeError):
        return ""
    return THINK_OPEN if str(text).rstrip().endswith(THINK_OPEN) else ""


def grpo_options(config: TrainConfig) -> dict:
    """The keyword arguments of the run's ``GRPOConfig``: ``cfg.trl`` as loaded (the start's preset, the device
    adjustments and the user's layers: :mod:`swe_srl.train.config`), the run's ``seed`` unless ``trl.seed`` is set,
    and the output path."""
    return {"seed": config.seed, **config.trl, "output_dir": str(config.output_dir)}


def grpo_args(config: TrainConfig):
    """The run's ``trl.GRPOConfig`` (:func:`grpo_options`); GRPOConfig's own checks (e.g. batch size vs
    ``num_generations``) become a :class:`ConfigError`."""
    from trl import GRPOConfig

    try:
        return GRPOConfig(**grpo_options(config))
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"trl options rejected by trl.GRPOConfig: {exc}") from exc


def peft_config(config: TrainConfig):
    """The LoRA config for ``--lora`` (None without it)."""
    if not config.lora.enabled:
        return None
    from peft import LoraConfig

    lora = config.lora
    return LoraConfig(
        r=lora.r,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=lora.target_modules,
        task_type="CAUSAL_LM",
    )
