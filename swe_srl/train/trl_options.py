"""Validation of the ``trl:`` options (``trl.GRPOConfig`` fields) before any work.

Every ``GRPOConfig`` field is passed through and honoured by TRL, except the few swe-srl owns (:data:`REFUSED`,
each refused with the option to use instead). Values are checked against the field's type annotation (pydantic, lax:
``1e-5`` for a float, ``3`` for an int) and its ``choices``; a wrong value is one line naming key, value and type.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import typing
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from pydantic import ConfigDict, TypeAdapter, ValidationError

from swe_srl.errors import ConfigError, TrainingError

TESTED_TRL = (1, 16)
"""TRL ``major.minor`` the overrides are written and tested against (pyproject: ``trl>=1.16,<1.17``)."""
TESTED_RANGE = f">={TESTED_TRL[0]}.{TESTED_TRL[1]},<{TESTED_TRL[0]}.{TESTED_TRL[1] + 1}"


def check_trl_version(installed: str | None = None) -> str:
    """The installed TRL version, or a :class:`TrainingError` naming it and the tested range."""
    if installed is None:
        try:
            installed = version("trl")
        except PackageNotFoundError as exc:
            raise TrainingError(f'TRL is not installed: pip install "trl{TESTED_RANGE}"') from exc
    parts = installed.split(".")
    try:
        major_minor = (int(parts[0]), int(parts[1]))
    except (IndexError, ValueError):
        major_minor = (-1, -1)
    if major_minor != TESTED_TRL and os.environ.get("SWE_SRL_ANY_TRL") != "1":
        raise TrainingError(
            f"TRL {installed} is installed, but swe-srl's trainer overrides TRL internals tested only with "
            f'trl{TESTED_RANGE}: pip install "trl{TESTED_RANGE}" (or set SWE_SRL_ANY_TRL=1 to try it anyway)'
        )
    return installed


_EVAL = "swe-srl's held-out evaluation is the greedy eval callback: use eval.every / eval.max_samples"
REFUSED: dict[str, str] = {
    "output_dir": "use --output (or output: in the config)",
    "resume_from_checkpoint": "use --resume (continues from the last checkpoint in --output)",
    "remove_unused_columns": "the reward reads the dataset's columns (expert_action, ...), so they must stay",
    "eval_strategy": _EVAL,
    "eval_steps": _EVAL,
    "eval_on_start": _EVAL,
    "do_eval": _EVAL,
    "num_generations_eval": _EVAL,
    "per_device_eval_batch_size": _EVAL + " (batch: eval.batch_size)",
    "load_best_model_at_end": "there is no TRL evaluation to pick the best checkpoint by; " + _EVAL,
    "metric_for_best_model": "there is no TRL evaluation to pick the best checkpoint by; " + _EVAL,
}
"""GRPOConfig fields swe-srl sets itself → why, and what to use instead."""


@cache
def _fields() -> dict[str, tuple[Any, Any]]:
    """field name → (type hint, choices or None)."""
    from trl import GRPOConfig

    hints = typing.get_type_hints(GRPOConfig)
    return {
        f.name: (hints.get(f.name, Any), f.metadata.get("choices")) for f in dataclasses.fields(GRPOConfig)
    }


@cache
def _adapter(hint: Any) -> TypeAdapter | None:
    try:
        return TypeAdapter(hint, config=ConfigDict(arbitrary_types_allowed=True))
    except Exception:  # noqa: BLE001 - a hint pydantic cannot express: leave the value to TRL
        return None


def _type_name(hint: Any) -> str:
    text = getattr(hint, "__name__", None) if isinstance(hint, type) else None
    text = text or str(hint).replace("typing.", "")
    for module in ("transformers.trainer_utils.", "transformers.training_args.", "transformers.debug_utils."):
        text = text.replace(module, "")
    return text


def check_value(key: str, value: Any) -> None:
    """One ``trl.KEY=value``: a known, not refused field with a value of its type."""
    fields = _fields()
    if key not in fields:
        raise ConfigError(f"unknown TRL option trl.{key}: not a field of trl.GRPOConfig (see its docs)")
    if key in REFUSED:
        raise ConfigError(f"trl.{key} is set by swe-srl: {REFUSED[key]}")
    hint, choices = fields[key]
    if choices is not None and value is not None and value not in choices:
        allowed = ", ".join(map(str, choices))
        raise ConfigError(f"invalid value for trl.{key}: {value!r} is not one of {allowed}")
    adapter = _adapter(hint)
    if adapter is None:
        return
    try:
        adapter.validate_python(value)
    except ValidationError:
        raise ConfigError(
            f"invalid value for trl.{key}: {value!r} ({type(value).__name__}); expected {_type_name(hint)}"
        ) from None


REPORTERS: dict[str, tuple[str, ...]] = {
    "tensorboard": ("tensorboard", "tensorboardX"),
    "wandb": ("wandb",),
    "mlflow": ("mlflow",),
    "trackio": ("trackio",),
    "comet_ml": ("comet_ml",),
    "clearml": ("clearml",),
    "neptune": ("neptune",),
    "dvclive": ("dvclive",),
    "swanlab": ("swanlab",),
}
"""``report_to`` integration → the packages any one of which it needs."""


def check_report_to(value: Any) -> None:
    """Each named logger's package is installed (else the run would fail after the model is built)."""
    names = [value] if isinstance(value, str) else list(value or [])
    for name in names:
        packages = REPORTERS.get(str(name))
        if packages and not any(importlib.util.find_spec(p) for p in packages):
            raise ConfigError(
                f"trl.report_to={name} needs the {packages[0]} package: pip install {packages[0]}"
            )


def vllm_available() -> bool:
    return importlib.util.find_spec("vllm") is not None


def check_trl_options(options: dict[str, Any], advantage: str) -> None:
    """All of a run's ``trl:`` options; combinations swe-srl cannot honour are refused by name."""
    for key, value in options.items():
        check_value(key, value)
    check_report_to(options.get("report_to"))
    if options.get("use_vllm") and not vllm_available():
        raise ConfigError(
            "trl.use_vllm=true needs vLLM, which is not installed: pip install vllm (CUDA GPUs only), or drop "
            "trl.use_vllm to generate with transformers (docs/gpu.md, 'vLLM generation')"
        )
    if advantage == "rloo" and options.get("multi_objective_aggregation", "sum_then_normalize") != (
        "sum_then_normalize"
    ):
        raise ConfigError(
            "trl.multi_objective_aggregation=normalize_then_sum normalizes each reward per group (GRPO's advantage); "
            "it has no rloo form: use advantage=grpo with it"
        )
