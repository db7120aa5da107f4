"""Loading the training config: the start's preset (or the named ``--preset``), then an optional YAML file, then
CLI flags, then dotted ``key=value`` overrides; unknown keys rejected by name.

Options TRL already has live under ``trl:`` and are handed to ``trl.GRPOConfig`` unchanged (names, types and
combinations checked by :mod:`swe_srl.train.trl_options`), so nothing of TRL's is copied here. Our own options cover
data, reward, dynamic sampling, advantage, the SFT term and the tiny model (the schema: :mod:`swe_srl.train.schema`,
its sections: :mod:`swe_srl.train.options`). Presets: :mod:`swe_srl.train.presets`.

Where training starts (:func:`start_for`: the tiny model or a real checkpoint) supplies the preset, so ``cfg.trl``
holds every TRL option the run passes (TRL's own defaults for the rest). Two adjustments are applied here, once,
between the preset and the user's layers, so they are part of the config: quiet logging (``report_to: none``, no
tqdm bar: the run has its own progress bar and metrics.jsonl), and on a machine without CUDA ``bf16: false``,
``use_cpu: true``, ``gradient_checkpointing: false``. After the merge, on CUDA with ``trl.bf16``, ``bfloat16`` goes
into ``trl.model_init_kwargs`` (the run's own ``dtype`` there wins). Every run writes what it used as
``config.yaml`` (:mod:`swe_srl.train.record`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from swe_srl.errors import ConfigError
from swe_srl.train.options import DynamicSampling, TinyOptions
from swe_srl.train.overrides import apply_override, load_yaml
from swe_srl.train.presets import deep_merge, preset_config
from swe_srl.train.schema import TrainConfig
from swe_srl.train.start import CheckpointStart, Start
from swe_srl.train.tiny.model import is_tiny_checkpoint
from swe_srl.train.tiny.start import TinyStart
from swe_srl.train.trl_options import check_trl_options, check_trl_version

__all__ = ["DynamicSampling", "TinyOptions", "TrainConfig", "load_config", "start_for", "start_of"]

QUIET: dict[str, Any] = {"trl": {"report_to": "none", "disable_tqdm": True}}
CPU: dict[str, Any] = {"trl": {"bf16": False, "use_cpu": True, "gradient_checkpointing": False}}


def start_for(model: str | None, init: str | None) -> Start:
    """Where a run starts: ``--init CKPT`` → the tiny start for a tiny checkpoint (its tokenizer carries the tiny
    chat template), else a real one; ``model`` ``tiny`` (or unset) → the tiny start; any other model → a real one."""
    if init:
        return TinyStart() if Path(init).is_dir() and is_tiny_checkpoint(init) else CheckpointStart()
    return TinyStart() if model in (None, "tiny") else CheckpointStart()


def start_of(config: TrainConfig) -> Start:
    """:func:`start_for` of a loaded config."""
    return start_for(config.model, config.init)


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def with_dtype(trl: dict[str, Any], cuda: bool, lora: bool = False) -> dict[str, Any]:
    """``trl`` with the weights' ``dtype`` merged into ``model_init_kwargs`` for a bf16 run on CUDA (the run's own
    ``dtype`` wins): ``bfloat16`` under LoRA (a frozen base; the adapters are fp32), else ``float32``: a full
    fine-tune keeps fp32 master weights and AdamW states under bf16 autocast, so that updates of a 5e-7 learning
    rate do not round away in bf16."""
    kwargs = trl.get("model_init_kwargs")
    if not (cuda and trl.get("bf16")) or not isinstance(kwargs, dict | None):
        return trl
    dtype = "bfloat16" if lora else "float32"
    return {**trl, "model_init_kwargs": {"dtype": dtype, **(kwargs or {})}}


def _format_error(exc: ValidationError, source: str) -> ConfigError:
    first = exc.errors()[0]
    key = ".".join(str(p) for p in first["loc"])
    if first["type"] == "extra_forbidden":
        return ConfigError(f"unknown config key {key!r} in {source}; remove it or check the spelling")
    return ConfigError(f"invalid value for {key!r} in {source}: {first['msg']} (got {first.get('input')!r})")


def _user_layers(path: Path | None, overrides: list[str], cli: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """(the YAML file, then ``cli`` values (None = unset), then dotted overrides; the source for errors)."""
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
    for assignment in overrides:
        apply_override(data, assignment)
    if overrides:
        source = f"{source} (with --set {' '.join(overrides)})"
    return data, source


def resolve(data: dict[str, Any], cuda: bool) -> tuple[dict[str, Any], Start]:
    """The merged config dict of the user's layers ``data`` and the start they name."""
    name = data.get("preset") if isinstance(data.get("preset"), str) else None
    named = preset_config(name)
    facts = deep_merge(named, data)
    start = start_for(facts.get("model"), facts.get("init"))
    if name in (None, start.preset_name):
        base = start.preset(facts.get("stage", "srl"), facts.get("method", "srl"), facts.get("effect", "off"))
    else:
        base = named
    merged = deep_merge(deep_merge(QUIET, base), {} if cuda else CPU)
    merged = deep_merge(merged, data)
    merged["preset"] = name or start.preset_name
    lora = bool((merged.get("lora") or {}).get("enabled"))
    merged["trl"] = with_dtype(merged.get("trl") or {}, cuda, lora)
    return merged, start


def load_config(
    path: Path | None = None, overrides: list[str] | None = None, *, cuda: bool | None = None, **cli: Any
) -> TrainConfig:
    """Build a config: the start's preset (or ``preset:`` / ``--preset``), then an optional YAML file, then ``cli``
    values (None = unset), then dotted overrides. TRL options are checked (names, types, vLLM, version) before any
    work. ``cuda``: resolve the device adjustments as on a CUDA machine (True) or on CPU (False); None = this one."""
    data, source = _user_layers(path, list(overrides or []), cli)
    merged, start = resolve(data, _cuda() if cuda is None else cuda)
    try:
        config = TrainConfig.model_validate(merged)
    except ValidationError as exc:
        raise _format_error(exc, source) from exc
    check_trl_version()
    check_trl_options(config.trl, config.advantage)
    check_combinations(config, start)
    return config


def check_combinations(config: TrainConfig, start: Start) -> None:
    """Options that do not go together, refused by name before any work."""
    if config.stage == "rlvr" and not config.init:
        raise ConfigError("stage 'rlvr' needs init: pass --init CKPT (an SRL checkpoint directory)")
    if config.preset == "cpu-small" and start.name == "tiny":
        raise ConfigError(
            "preset cpu-small trains a small local model: pass --model PATH (cpu-tiny needs none)"
        )
    if config.swap_library_names and start.name != "tiny":
        raise ConfigError(
            f"swap_library_names={config.swap_library_names} swaps the tiny model's training names; "
            f"{config.init or config.model} is a real model: use swap_library_names=0 with it"
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
