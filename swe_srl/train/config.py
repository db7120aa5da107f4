"""Typed training config: preset + YAML file + dotted ``key=value`` overrides, unknown keys rejected by name.

Options TRL already has live under ``trl:`` and are handed to ``trl.GRPOConfig`` unchanged (names, types and
combinations checked by :mod:`swe_srl.train.trl_options`), so nothing of TRL's is copied here. Our own options cover
data, reward, dynamic sampling, advantage, the SFT term and the tiny default model. Presets:
:mod:`swe_srl.train.presets`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from swe_srl.benchmark.instances import HELD_OUT
from swe_srl.errors import ConfigError
from swe_srl.rewards.effect import EffectMode
from swe_srl.train.augment import SwapPool
from swe_srl.train.overrides import apply_override, load_yaml
from swe_srl.train.presets import (
    REAL_TRL_DEFAULTS,
    TINY_REWARD,
    TINY_SWAP,
    TINY_TRL_DEFAULTS,
    deep_merge,
    preset_config,
)
from swe_srl.train.trl_options import check_trl_options, check_trl_version

__all__ = ["REAL_TRL_DEFAULTS", "TINY_TRL_DEFAULTS", "TrainConfig", "load_config"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class DynamicSampling(_Strict):
    """DAPO-style dynamic sampling: drop groups whose reward std ≤ epsilon and refill with other prompts."""

    enabled: bool = Field(True, description="Drop zero-variance groups (they carry no GRPO signal).")
    epsilon: float = Field(0.1, ge=0.0, description="A group is kept when its reward std is > epsilon.")
    max_rounds: int = Field(3, ge=1, description="Generation rounds per step (1 = drop only, no refill).")


class LossOptions(_Strict):
    """Terms added to TRL's GRPO loss (TRL's own: ``trl.entropy_coef``, ``trl.epsilon_high``, ``trl.loss_type``)."""

    sft_weight: float = Field(
        0.0,
        ge=0.0,
        description="λ of the auxiliary SFT term: NLL of the expert action given the prompt, added to each GRPO "
        "step against language drift (0 = off; typical 0.05-0.2). Logged as sft/loss.",
    )


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

    hidden_size: int = Field(128, ge=16, le=512, description="Hidden size.")
    mlp_ratio: float = Field(
        2.0,
        gt=0,
        le=8,
        description="MLP width over hidden_size (small: less room to memorise, attention does more).",
    )
    layers: int = Field(4, ge=1, le=8, description="Transformer layers.")
    heads: int = Field(4, ge=1, description="Attention heads.")
    vocab_size: int = Field(
        2048, ge=280, le=32000, description="BPE vocabulary size (trained on the train split's texts)."
    )
    seed: int = Field(0, description="Init seed.")
    max_prompt_tokens: int = Field(
        768,
        ge=32,
        description="The tiny model's context, fitted by the one prompt fitter (system prompt and problem kept).",
    )
    threads: int = Field(
        2,
        ge=1,
        description="CPU threads (torch) for the tiny model (2: this machine's cores; one per run when two runs "
        "share them).",
    )
    warmup_steps: int = Field(
        200,
        ge=0,
        description="Format warm-up: supervised steps on the train split's '</think>' + expert action before SRL "
        "(stands in for the instruction tuning a real base model has; 0 = SRL from random init).",
    )
    warmup_lr: float = Field(3e-3, gt=0, description="Learning rate of the format warm-up (AdamW).")
    warmup_batch: int = Field(8, ge=1, description="Samples per format warm-up step.")
    warmup_ramp: int = Field(
        20, ge=0, description="Warm-up steps over which the learning rate rises linearly (0: constant)."
    )
    warmup_target_tokens: int = Field(
        32, ge=1, description="Warm-up targets ('</think>' + action + EOS) are cut to this many tokens."
    )
    warmup_prompt_weight: float = Field(
        0.1,
        ge=0.0,
        description="Warm-up loss on the prompt's own tokens (problem, oracle windows, history), per token "
        "against a target token's 1; 0 = the target only.",
    )
    warmup_history_weight: float = Field(
        0.0,
        ge=0.0,
        description="Warm-up loss weight of the prompt's earlier assistant turns (the expert's previous actions, "
        "as in multi-turn SFT on every turn) instead of warmup_prompt_weight; 0 = no different from the prompt.",
    )
    warmup_renamed_copies: int = Field(
        0,
        ge=0,
        description="Warm-up data: this many copies of every train sample whose problem names a failing test, "
        "with those test names renamed everywhere in the sample (swe_srl.train.augment); 0 = none.",
    )
    warmup_swap: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="Share of the warm-up samples whose own library's names are swapped (as swap_library_names "
        "does for SRL: swe_srl.train.augment), the new names from warmup_swap_pool; 0 = none.",
    )
    warmup_swap_pool: SwapPool = Field(
        "train",
        description="Where warmup_swap draws the new names: train (other train libraries') or stdlib (the standard "
        "library's, as swap_pool).",
    )
    warmup_pool_copies: int = Field(
        0,
        ge=0,
        description="Warm-up data: this many copies of every train sample with its own library's names replaced "
        "by names drawn from the standard library (swe_srl.train.augment: pool_names); 0 = none.",
    )
    slots: bool = Field(
        True,
        description="Slotted names: the prompt's code names (.py paths, path words, test ids, defined names) "
        "become slot tokens <n0>, <n1>, ... the policy reads and writes, mapped back before scoring "
        "(swe_srl.core.slots).",
    )
    induction_steps: int = Field(
        0,
        ge=0,
        description="Induction steps before the warm-up: repeats of train-prompt windows, the loss on the repeat "
        "(the stand-in for a pretrained model's copying; swe_srl.train.induction); 0 = none.",
    )
    induction_every: int = Field(
        0,
        ge=0,
        description="One more induction step after every K warm-up steps (0 = none during the warm-up).",
    )


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
    parallel: int = Field(
        4, ge=1, description="Episodes played at once (one env each; one batched generation per turn)."
    )
    eval_instances: int = Field(
        2, ge=0, description="Held-out resolve rate: greedy episodes on the first N test instances (0: none)."
    )


class TrainConfig(_Strict):
    """One training run. ``trl`` holds GRPOConfig options (on top of the defaults for the chosen model)."""

    preset: str | None = Field(None, description="Starting config: cpu-tiny, cpu-small or paper-gpu.")
    stage: Literal["srl", "rlvr"] = Field("srl", description="SRL on step samples, or RLVR episodes.")
    method: Literal["srl", "sft"] = Field(
        "srl", description="SRL (GRPO on step rewards), or the SFT baseline on the same expert actions."
    )
    init: str | None = Field(None, description="Checkpoint to start from (required for --stage rlvr).")
    model: str | None = Field(None, description="HF id or path; None = tiny in-process model (CPU default).")
    samples: str | None = Field(None, description="Step samples JSONL (from `swe-srl decompose`).")
    trajectories: list[str] = Field(
        default_factory=list, description="Trajectory files / HF ids to decompose."
    )
    tasks: str | None = Field(None, description="Task set (for oracle files and RLVR episodes).")
    oracle_files: bool = Field(False, description="Prompts include the oracle files (paths + contents).")
    expert_seeds: int = Field(
        4,
        ge=1,
        description="Bundled suite only: scripted-expert runs per train task (seeds 0..N-1; each picks other "
        "commands for the same problem). Dev and test keep one.",
    )
    swap_library_names: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="Share of the SRL training samples whose own library's names (paths, modules, symbols, tests "
        "its expert actions write and no other train library's do) are swapped for other names (swap_pool) "
        "everywhere but the system prompt (swe_srl.train.augment), so that a recalled name is wrong and only one "
        "read from the prompt is right; the warm-up and the baselines keep the samples as they are (--method sft "
        "trains on the swapped rows only when this is set). 0 = none; without --model, SRL's default is "
        "presets.TINY_SWAP (1.0).",
    )
    swap_pool: SwapPool = Field(
        "stdlib",
        description="Where swap_library_names draws the new names: stdlib (names the standard library defines: an "
        "open set, swe_srl.train.augment.pool_names; the default, chosen on dev) or train (other train libraries').",
    )
    reward: Literal["srl", "layered", "mixed"] = Field(
        "layered",
        description="Paper similarity, layered reward, or their weighted mean (mixed: reward_mix). Without --model "
        "the default is presets.TINY_REWARD (mixed); real models default to layered.",
    )
    reward_mix: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="--reward mixed: the paper similarity's share (mix·similarity + (1 − mix)·layered).",
    )
    wise_ft: float = Field(
        1.0,
        gt=0.0,
        le=1.0,
        description="WiSE-FT (swe_srl.train.wise): final/ holds (1 − wise_ft)·start + wise_ft·trained weights; 1 = "
        'the trained weights (the default; a mix was tried on dev and test, docs/training.md "Round 23"). SRL '
        "without LoRA only.",
    )
    effect: EffectMode = Field("off", description="Effect layer of the layered reward.")
    fuzzy: bool = Field(False, description="Fuzzy normalization in the semantic layer.")
    advantage: Literal["grpo", "rloo"] = Field(
        "grpo", description="Group mean/std, or leave-one-out baseline."
    )
    dynamic_sampling: DynamicSampling = Field(default_factory=DynamicSampling)
    loss: LossOptions = Field(default_factory=LossOptions)
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
    heldout_split: Literal["test", "dev"] = Field(
        "test",
        description="The split the held-out report decodes and scores: test (the report), or dev (choosing defaults).",
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


def _format_error(exc: ValidationError, source: str) -> ConfigError:
    first = exc.errors()[0]
    key = ".".join(str(p) for p in first["loc"])
    if first["type"] == "extra_forbidden":
        return ConfigError(f"unknown config key {key!r} in {source}; remove it or check the spelling")
    return ConfigError(f"invalid value for {key!r} in {source}: {first['msg']} (got {first.get('input')!r})")


def load_config(path: Path | None = None, overrides: list[str] | None = None, **cli: Any) -> TrainConfig:
    """Build a config: the preset (``preset:`` / ``--preset``), then an optional YAML file, then ``cli`` values
    (None = unset), then dotted overrides. TRL options are checked (names, types, vLLM, version) before any work."""
    data: dict[str, Any] = {}
    source = "defaults"
    if path is not None:
        source = str(path)
        try:
            loaded = load_yaml(Path(path).read_text(encoding="utf-8")) or {}
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
    preset = data.get("preset")
    data = deep_merge(preset_config(preset if isinstance(preset, str) else None), data)
    if "reward" not in data and not data.get("model") and data.get("effect", "off") == "off":
        data["reward"] = TINY_REWARD  # the tiny model's default; asking for an effect layer means layered
    if "swap_library_names" not in data and not data.get("model") and data.get("method", "srl") == "srl":
        # the tiny model's SRL default; the SFT baseline imitates plain samples
        data["swap_library_names"] = TINY_SWAP
    try:
        config = TrainConfig.model_validate(data)
    except ValidationError as exc:
        raise _format_error(exc, source) from exc
    check_trl_version()
    check_trl_options(config.trl, config.advantage)
    if config.stage == "rlvr" and not config.init:
        raise ConfigError("stage 'rlvr' needs init: pass --init CKPT (an SRL checkpoint directory)")
    if config.preset == "cpu-small" and not (config.model or config.init):
        raise ConfigError(
            "preset cpu-small trains a small local model: pass --model PATH (cpu-tiny needs none)"
        )
    if config.method == "sft" and (config.stage != "srl" or config.resume):
        raise ConfigError("--method sft is a baseline of the SRL stage: no --stage rlvr, no --resume")
    if config.wise_ft < 1 and (config.stage, config.method, config.lora.enabled) != ("srl", "srl", False):
        raise ConfigError(
            f"wise_ft={config.wise_ft} mixes SRL's trained weights with its start: --method srl, --stage srl, "
            "no --lora (use wise_ft=1 there)"
        )
    if config.stage == "rlvr" and config.loss.sft_weight:
        raise ConfigError(
            "loss.sft_weight is for the SRL stage: RLVR episodes have no expert action to imitate"
        )
    return config
