"""Where sandboxes run: the ``--sandboxes`` / ``$SWE_SRL_SANDBOXES`` / config ``sandboxes`` setting, and the
``ray start`` arguments of a sandbox node (``swe-srl worker``)."""

from __future__ import annotations

import json

import pytest

from swe_srl.errors import ConfigError
from swe_srl.infra.sandbox.nodes import start_args
from swe_srl.infra.sandbox.placement import parse_sandboxes, sandbox_address, select_sandboxes


@pytest.mark.parametrize(
    ("value", "address"),
    [
        (None, None),  # unset: local, today's behaviour
        ("local", None),
        ("ray", "auto"),  # this machine's cluster
        ("ray:auto", "auto"),
        ("ray:10.0.0.1:6379", "10.0.0.1:6379"),  # as --ray takes it
        ("ray:ray://head:10001", "ray://head:10001"),
    ],
)
def test_setting_gives_the_ray_address(value, address) -> None:
    assert parse_sandboxes(value) == address


@pytest.mark.parametrize("value", ["remote", "ray:", "ray:head", "docker", "Ray"])
def test_bad_setting_is_one_line_with_the_choices(value) -> None:
    with pytest.raises(ConfigError, match=r"--sandboxes .*choose one of local, ray, ray:ADDRESS"):
        parse_sandboxes(value)


def test_cli_value_wins_and_reaches_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("SWE_SRL_SANDBOXES", "local")
    select_sandboxes("ray:10.0.0.1:6379")
    assert sandbox_address() == "10.0.0.1:6379"
    monkeypatch.setenv("SWE_SRL_SANDBOXES", "bogus")
    with pytest.raises(ConfigError, match=r"\$SWE_SRL_SANDBOXES 'bogus'"):
        select_sandboxes(None)  # a bad environment value is reported before any work


def test_config_key_is_checked() -> None:
    from swe_srl.train.schema import TrainConfig

    assert TrainConfig(sandboxes="ray").sandboxes == "ray"
    with pytest.raises(ValueError, match="sandboxes 'elsewhere'"):
        TrainConfig(sandboxes="elsewhere")


def test_node_declares_its_slots_and_the_node_resource() -> None:
    head = start_args(4, None, 6390, None)
    assert head[:3] == ["start", "--head", "--port=6390"]
    resources = json.loads(next(a for a in head if a.startswith("--resources=")).split("=", 1)[1])
    assert resources == {"swe_srl_sandbox": 4, "swe_srl_sandbox_node": 1000}
    joined = start_args(2, "10.0.0.1:6379", 6390, 8)
    assert joined[1:3] == ["--address", "10.0.0.1:6379"] and "--num-cpus=8" in joined
    with pytest.raises(ConfigError, match="at least 1 slot"):
        start_args(0, None, 6379, None)
