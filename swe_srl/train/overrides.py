"""The text forms of a training config: YAML (with YAML 1.2's exponent floats) and ``--set a.b.c=value`` overrides."""

from __future__ import annotations

import re
from typing import Any

import yaml

from swe_srl.errors import ConfigError


class _Loader(yaml.SafeLoader):
    """YAML with YAML 1.2's floats: PyYAML (YAML 1.1) reads ``5e-4`` (no dot) as a string, at any depth."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def load_yaml(text: str) -> Any:
    """``text`` as YAML, exponent floats without a dot included (``{min_lr: 5e-4}`` → 0.0005)."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass


def _coerce(text: str) -> Any:
    """A ``--set`` value: YAML scalar/list/dict syntax (``3``, ``1e-6``, ``true``, ``[a, b]``, ``{k: 5e-4}``)."""
    for number in (int, float):
        try:
            return number(text)
        except ValueError:
            pass
    try:
        return load_yaml(text)
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
