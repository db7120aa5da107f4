"""``config.yaml``: the configuration a run used, written in its output folder when it starts.

The ``--config`` schema with every key written out (:class:`~swe_srl.train.schema.TrainConfig`, sections included),
paths absolute, and under ``trl:`` every ``trl.GRPOConfig`` field the run passes: the value the run gave, else the
field's own default (so a value TRL derives when it is unset stays unset), without ``output_dir`` (``output``), the
fields swe-srl sets itself (:data:`~swe_srl.train.trl_options.REFUSED`) and ``seed`` when it is the run's ``seed``.
``swe-srl train --config OUTPUT/config.yaml`` runs the same configuration again.
"""

from __future__ import annotations

import dataclasses
import enum
import os
from pathlib import Path
from typing import Any

import yaml

from swe_srl.infra.sandbox.base import ALLOW_UNLIMITED_ENV
from swe_srl.paths import atomic_write_text
from swe_srl.train.policy import grpo_options
from swe_srl.train.schema import TrainConfig
from swe_srl.train.trl_options import REFUSED

PATH_KEYS = ("samples", "init", "tasks", "output")
"""Top-level keys that may name a local path: written absolute when they do."""


def _plain(value: Any) -> Any:
    """``value`` as YAML-safe data (enums as their values, tuples as lists)."""
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _absolute(value: str | None) -> str | None:
    """A local path absolute; anything else (a hub id, a task set name, None) as it is."""
    if value is None or not Path(value).exists():
        return value
    return str(Path(value).resolve())


def trl_fields(config: TrainConfig) -> dict[str, Any]:
    """Every ``GRPOConfig`` init field the run passes (see the module's docstring), in GRPOConfig's order."""
    from trl import GRPOConfig

    given, out = grpo_options(config), {}
    for field in dataclasses.fields(GRPOConfig):
        if not field.init or field.name in REFUSED or field.name == "output_dir":
            continue
        if field.name in given:
            value = given[field.name]
        elif field.default is not dataclasses.MISSING:
            value = field.default
        elif field.default_factory is not dataclasses.MISSING:
            value = field.default_factory()
        else:
            continue
        out[field.name] = _plain(value)
    if out.get("seed") == config.seed and "seed" not in config.trl:
        del out["seed"]
    return out


def resolved_config(config: TrainConfig) -> dict[str, Any]:
    """The run's configuration as ``config.yaml`` holds it."""
    data = _plain(config.model_dump(mode="json"))
    for key in PATH_KEYS:
        data[key] = _absolute(data.get(key))
    data["output"] = str(Path(config.output).resolve())
    data["trajectories"] = [_absolute(t) for t in data.get("trajectories") or []]
    data["trl"] = trl_fields(config)
    return data


def write_config(config: TrainConfig) -> Path:
    """Write ``config.yaml`` into the output folder (atomically); returns its path."""
    out = config.output_dir
    out.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(resolved_config(config), sort_keys=False, allow_unicode=True)
    if os.environ.get(ALLOW_UNLIMITED_ENV) == "1":  # a comment, so the file still runs as --config
        text = f"# unlimited sandboxes allowed ({ALLOW_UNLIMITED_ENV}=1): limits the engine cannot enforce\n{text}"
    atomic_write_text(out / "config.yaml", text)
    return out / "config.yaml"
