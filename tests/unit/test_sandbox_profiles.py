"""The sandbox profile table: each use's limits, environment and label, and how callers override them."""

from __future__ import annotations

import pytest

from swe_srl.errors import ConfigError
from swe_srl.infra.sandbox.base import Limits
from swe_srl.infra.sandbox.factory import PROFILE_LABEL, PROFILES, QUIET_WORKTREE, sandbox_spec

QUIET = {"PYTHONDONTWRITEBYTECODE": "1", "PYTEST_ADDOPTS": "-p no:cacheprovider"}


@pytest.mark.parametrize(
    ("profile", "limits", "env"),
    [
        ("episode", Limits(), {}),
        ("grading", Limits(memory="4g", command_timeout_s=1800.0, episode_timeout_s=2100.0), {}),
        ("validation", Limits(), {}),
        ("expert", Limits(command_timeout_s=120.0), QUIET),
        ("effect", Limits(command_timeout_s=120.0), QUIET),
        ("shell", Limits(command_timeout_s=120.0), QUIET),
    ],
)
def test_profile_settings(profile: str, limits: Limits, env: dict[str, str]) -> None:
    spec = sandbox_spec("img:tag", profile=profile, base_commit="abc")  # type: ignore[arg-type]
    assert (spec.image, spec.workdir, spec.base_commit) == ("img:tag", "/testbed", "abc")
    assert spec.limits == limits and spec.env == env and spec.labels == {PROFILE_LABEL: profile}


def test_every_profile_is_tested_and_effect_matches_expert() -> None:
    assert set(PROFILES) == {"episode", "grading", "validation", "expert", "effect", "shell"}
    # the effect layer compares trees with the expert's stored ones: same settings, or equal actions differ
    assert PROFILES["effect"] == PROFILES["expert"] and PROFILES["expert"].env == QUIET_WORKTREE


def test_overrides() -> None:
    grading = sandbox_spec(
        "i", profile="grading", limits={"command_timeout_s": 60.0, "episode_timeout_s": 360.0}
    )
    assert grading.limits == Limits(memory="4g", command_timeout_s=60.0, episode_timeout_s=360.0)
    mine = Limits(memory="1g", episode_timeout_s=5)
    assert (
        sandbox_spec("i", profile="episode", limits=mine).limits is mine
    )  # a whole Limits replaces the profile's
    spec = sandbox_spec("i", profile="expert", env={"FOO": "1", "PYTHONDONTWRITEBYTECODE": ""})
    assert spec.env == {"PYTHONDONTWRITEBYTECODE": "", "PYTEST_ADDOPTS": "-p no:cacheprovider", "FOO": "1"}
    assert PROFILES["expert"].env == QUIET  # the table itself is never changed by an override
    with pytest.raises(ConfigError, match="limits|Limits.memory"):
        sandbox_spec("i", profile="grading", limits={"memory": "lots"})
    with pytest.raises(ConfigError, match="choose one of episode, grading"):
        sandbox_spec("i", profile="nightly")  # type: ignore[arg-type]
