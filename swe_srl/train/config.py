"""Typed training config: YAML file + dotted ``key=value`` overrides, unknown keys rejected with the key named.

Options TRL already has live under ``trl:`` and are handed to ``trl.GRPOConfig`` unchanged (validated against its
fields), so nothing of TRL's is copied here. Our own options cover data, reward, dynamic sampling, advantage and
the tiny default model.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from swe_srl.benchmark.instances import HELD_OUT
from swe_srl.errors import ConfigError
from swe_srl.rewards.effect import EffectMode


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class DynamicSampling(_Strict):
    """DAPO-style dynamic sampling: drop groups whose reward std ≤ epsilon and refill with other prompts."""

    enabled: bool = Field(True, description="Drop zero-variance groups (they carry no GRPO signal).")
    epsilon: float = Field(0.1, ge=0.0, description="A group is kept when its reward std is > epsilon.")
    max_rounds: int = Field(3, ge=1, description="Generation rounds per step (1 = drop only, no refill).")


class LoraOptions(_Strict):
    """LoRA adapters through peft (``--lora``)."""

    enabled: bool = Field(False, description="Train LoRA adapters instead of all weights.")
    r: int = Field(16, ge=1, description="Adapter rank.")
    alpha: int = Field(32, ge=1, description="LoRA alpha.")
    dropout: float = Field(0.05, ge=0.0, le=1.0, description="LoRA dropout.")
    target_modules: str | list[str] = Field("all-linear", description="Modules that get adapters.")


class EvalOptions(_Strict):
    """Periodic held-out evaluation: mean reward on test-split samples with greedy decoding."""

    every: int = Field(
        20,
        ge=0,
        description="Evaluate before training, every N optimizer steps and at the end (0 = end only).",
    )
    max_samples: int = Field(
        32, ge=0, description="Test samples per evaluation, spread over the split (0 disables evaluation)."
    )
    batch_size: int = Field(8, ge=1, description="Generation batch size for evaluation.")


class TinyOptions(_Strict):
    """The embedded default policy: a Qwen2-shaped model (random init + a short format warm-up) and a BPE tokenizer
    trained on the samples."""

    hidden_size: int = Field(64, ge=16, le=512, description="Hidden size.")
    layers: int = Field(2, ge=1, le=8, description="Transformer layers.")
    heads: int = Field(4, ge=1, description="Attention heads.")
    vocab_size: int = Field(
        384, ge=280, le=32000, description="BPE vocabulary size (small: format reachable)."
    )
    seed: int = Field(0, description="Init seed.")
    max_prompt_tokens: int = Field(
        384,
        ge=32,
        description="The tiny model's context: longer prompts keep their last N tokens (whole latest messages).",
    )
    threads: int = Field(
        1, ge=1, description="CPU threads (torch) for the tiny model: more only add contention at this size."
    )
    warmup_steps: int = Field(
        60,
        ge=0,
        description="Format warm-up: supervised steps on the train split's '</think>' + expert action before SRL "
        "(stands in for the instruction tuning a real base model has; 0 = SRL from random init).",
    )
    warmup_lr: float = Field(3e-3, gt=0, description="Learning rate of the format warm-up (AdamW).")
    warmup_batch: int = Field(16, ge=1, description="Samples per format warm-up step.")


class RlvrOptions(_Strict):
    """SRL → RLVR (``--stage rlvr``): multi-turn episodes in ``SWEEnv`` with the outcome reward."""

    instances: int = Field(
        2, ge=1, description="Episodes come from the first N train instances of the task set."
    )
    max_turns: int = Field(
        3, ge=1, description="Model turns per episode (unsubmitted → unresolved, reward 0)."
    )
    max_new_tokens: int = Field(48, ge=1, description="Tokens the policy writes per turn.")
    command_timeout_s: float = Field(30.0, gt=0, description="Per-command timeout in the sandbox.")


class TrainConfig(_Strict):
    """One training run. ``trl`` holds GRPOConfig options (on top of the defaults for the chosen model)."""

    stage: Literal["srl", "rlvr"] = Field("srl", description="SRL on step samples, or RLVR episodes.")
    init: str | None = Field(None, description="Checkpoint to start from (required for --stage rlvr).")
    model: str | None = Field(None, description="HF id or path; None = tiny in-process model (CPU default).")
    samples: str | None = Field(None, description="Step samples JSONL (from `swe-srl decompose`).")
    trajectories: list[str] = Field(
        default_factory=list, description="Trajectory files / HF ids to decompose."
    )
    tasks: str | None = Field(None, description="Task set (for oracle files and RLVR episodes).")
    oracle_files: bool = Field(False, description="Prompts include the oracle files (paths + contents).")
    reward: Literal["srl", "layered"] = Field("layered", description="Paper similarity, or layered reward.")
    effect: EffectMode = Field("off", description="Effect layer of the layered reward.")
    fuzzy: bool = Field(False, description="Fuzzy normalization in the semantic layer.")
    advantage: Literal["grpo", "rloo"] = Field(
        "grpo", description="Group mean/std, or leave-one-out baseline."
    )
    dynamic_sampling: DynamicSampling = Field(default_factory=DynamicSampling)
    lora: LoraOptions = Field(default_factory=LoraOptions)
    eval: EvalOptions = Field(default_factory=EvalOptions)
    tiny: TinyOptions = Field(default_factory=TinyOptions)
    rlvr: RlvrOptions = Field(default_factory=RlvrOptions)
    fast_generation: bool = Field(
        True, description="On CUDA: static KV cache + compiled decoding for rollouts."
    )
    max_prompt_tokens: int | None = Field(
        None,
        ge=32,
        description="Real models (--model): cut longer prompts to their last N tokens, whole latest messages first "
        "(None = whole prompts). The tiny model uses tiny.max_prompt_tokens.",
    )
    test_fraction: float = Field(
        HELD_OUT, ge=0.0, lt=1.0, description="Held-out share when samples carry no split (the split rule)."
    )
    seed: int = Field(0, description="Data split / sampling seed.")
    output: str = Field("runs/srl", description="Output directory (checkpoints, metrics, plot, summary).")
    resume: bool = Field(False, description="Resume from the last checkpoint in the output directory.")
    allow_eval_instances: bool = Field(
        False,
        description="Train on SWE-bench evaluation instances (Verified/Lite/test) anyway: refused by default.",
    )
    trl: dict[str, Any] = Field(default_factory=dict, description="GRPOConfig options, passed through.")

    @property
    def output_dir(self) -> Path:
        return Path(self.output)


# Defaults from the method (SRL paper setting) for real models; the tiny default is tuned to learn on 2 CPU cores.
REAL_TRL_DEFAULTS: dict[str, Any] = {
    "num_generations": 8,
    "temperature": 1.0,
    "learning_rate": 5e-6,
    "lr_scheduler_type": "cosine_with_min_lr",
    "lr_scheduler_kwargs": {"min_lr": 1e-6},
    "beta": 0.05,
    "per_device_train_batch_size": 32,  # completions per micro-batch
    "gradient_accumulation_steps": 8,  # 32 × 8 = 256 completions = 32 prompts × 8 generations per step
    "max_completion_length": 512,
    "max_grad_norm": 1.0,
    "num_train_epochs": 1,
    "gradient_checkpointing": True,
    "bf16": True,
    "logging_steps": 1,
    "save_steps": 100,
}
TINY_TRL_DEFAULTS: dict[str, Any] = {
    "num_generations": 8,
    "temperature": 1.0,
    "learning_rate": 1e-3,  # large for a 64-wide model to move in 40 steps; 5e-3 undoes the format warm-up
    "lr_scheduler_type": "cosine_with_min_lr",
    "lr_scheduler_kwargs": {"min_lr": 2e-4},
    "warmup_steps": 0,
    "beta": 0.05,
    "per_device_train_batch_size": 32,  # 4 prompts × 8 generations
    "gradient_accumulation_steps": 1,
    "max_completion_length": 24,
    "max_grad_norm": 1.0,
    "max_steps": 40,
    "logging_steps": 1,
    "save_steps": 20,
    "bf16": False,
}


def trl_field_names() -> set[str]:
    from trl import GRPOConfig

    return {f.name for f in dataclasses.fields(GRPOConfig)}


def check_trl_keys(options: dict[str, Any]) -> None:
    """Reject GRPOConfig options that do not exist, naming the key."""
    known = trl_field_names()
    for key in options:
        if key not in known:
            raise ConfigError(f"unknown TRL option trl.{key}: not a field of trl.GRPOConfig (see its docs)")


def _coerce(text: str) -> Any:
    """A ``--set`` value: YAML scalar/list/dict syntax (``3``, ``1e-6``, ``true``, ``[a, b]``, ``null``)."""
    for number in (int, float):  # YAML 1.1 reads "5e-3" as a string
        try:
            return number(text)
        except ValueError:
            pass
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def apply_override(data: dict[str, Any], assignment: str) -> None:
    """Apply one ``a.b.c=value`` override to a nested dict, in place."""
    key, sep, raw = assignment.partition("=")
    if not sep or not key.strip():
        raise ConfigError(
            f"bad override {assignment!r}: expected key=value, e.g. dynamic_sampling.epsilon=0.05"
        )
    parts = key.strip().split(".")
    node = data
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"bad override {assignment!r}: {part!r} is not a section")
        node = child
    node[parts[-1]] = _coerce(raw)


def _format_error(exc: ValidationError, source: str) -> ConfigError:
    first = exc.errors()[0]
    key = ".".join(str(p) for p in first["loc"])
    if first["type"] == "extra_forbidden":
        return ConfigError(f"unknown config key {key!r} in {source}; remove it or check the spelling")
    return ConfigError(f"invalid value for {key!r} in {source}: {first['msg']} (got {first.get('input')!r})")


def load_config(path: Path | None = None, overrides: list[str] | None = None, **cli: Any) -> TrainConfig:
    """Build a config from an optional YAML file, then ``cli`` values (None = unset), then dotted overrides."""
    data: dict[str, Any] = {}
    source = "defaults"
    if path is not None:
        source = str(path)
        try:
            loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read config {path}: {exc}") from exc
        if not isinstance(loaded, dict):
            raise ConfigError(f"config {path} must be a mapping at top level, got {type(loaded).__name__}")
        data.update(loaded)
    for key, value in cli.items():
        if value is not None:
            data[key] = value
    for assignment in overrides or []:
        apply_override(data, assignment)
    if overrides:
        source = f"{source} (with --set {' '.join(overrides)})"
    try:
        config = TrainConfig.model_validate(data)
    except ValidationError as exc:
        raise _format_error(exc, source) from exc
    check_trl_keys(config.trl)
    if config.stage == "rlvr" and not config.init:
        raise ConfigError("stage 'rlvr' needs init: pass --init CKPT (an SRL checkpoint directory)")
    return config
