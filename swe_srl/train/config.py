"""Typed training config: preset + YAML file + dotted ``key=value`` overrides, unknown keys rejected by name.

Options TRL already has live under ``trl:`` and are handed to ``trl.GRPOConfig`` unchanged (names, types and
combinations checked by :mod:`swe_srl.train.trl_options`), so nothing of TRL's is copied here. Our own options cover
data, reward, dynamic sampling, advantage, the SFT term and the tiny default model (the sections:
:mod:`swe_srl.train.options`). Presets: :mod:`swe_srl.train.presets`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError

from swe_srl.benchmark.instances import HELD_OUT
from swe_srl.errors import ConfigError
from swe_srl.rewards.effect.protocol import EffectMode
from swe_srl.train.augment import SwapPool
from swe_srl.train.options import (
    DynamicSampling,
    EvalOptions,
    LoraOptions,
    LossOptions,
    RlvrOptions,
    StrictOptions,
    TinyOptions,
)
from swe_srl.train.overrides import apply_override, load_yaml
from swe_srl.train.presets import (
    REAL_TRL_DEFAULTS,
    TINY_LOSS,
    TINY_REWARD,
    TINY_SWAP,
    TINY_TRL_DEFAULTS,
    deep_merge,
    preset_config,
)
from swe_srl.train.trl_options import check_trl_options, check_trl_version

__all__ = ["REAL_TRL_DEFAULTS", "TINY_TRL_DEFAULTS", "TrainConfig", "load_config"]


class TrainConfig(StrictOptions):
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
        "the trained weights (the default; what a mix did on dev and test: docs/experiments.md, WiSE-FT). SRL "
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
    if not data.get("model"):
        # the tiny model's loss defaults (the replay anchor: SRL only); --set loss.* wins
        srl = (data.get("stage", "srl"), data.get("method", "srl")) == ("srl", "srl")
        tiny_loss = TINY_LOSS if srl else {k: v for k, v in TINY_LOSS.items() if k != "replay_weight"}
        data["loss"] = {**tiny_loss, **(data.get("loss") or {})}
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
    for key in ("sft_weight", "replay_weight"):
        if config.stage == "rlvr" and getattr(config.loss, key):
            raise ConfigError(
                f"loss.{key} is for the SRL stage: RLVR episodes have no expert action to imitate"
            )
    return config
