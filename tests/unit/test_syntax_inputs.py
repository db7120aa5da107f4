"""The syntax layer's inputs in the TRL adapter: given ``inputs``, a located step is judged against its image's
executables and created files with the effect layer off; without a Docker engine :class:`StepInputs` falls back to
the default set and says so (the env and the trainer agreeing on a real image: tests/docker/test_one_reward.py)."""

from __future__ import annotations

import pytest

from swe_srl.core.actions import format_output
from swe_srl.errors import ConfigError
from swe_srl.rewards.syntax_inputs import NO_DOCKER, StepInputs
from swe_srl.rewards.trl import SRLReward
from swe_srl.trajectories.schema import Step, Trajectory

EXPERT = "grep -rn foo src"


class Image:
    """The inputs of an image without ``rg`` where an earlier step created ``repro.sh``; counts its calls."""

    def __init__(self) -> None:
        self.asked: list[tuple] = []

    def __call__(self, instance_id, trajectory_hash, step):
        self.asked.append((instance_id, trajectory_hash, step))
        return frozenset({"grep", "ls"}), frozenset({"repro.sh"})


def _syntax(reward: SRLReward, actions: list[str], located: bool = True) -> list[float]:
    n = len(actions)
    where = (["i1"] * n, ["h"] * n, [2] * n) if located else ([None] * n, [None] * n, [None] * n)
    reward([""] * n, [format_output("t", a) for a in actions], [EXPERT] * n,
           instance_id=where[0], trajectory_hash=where[1], step=where[2])  # fmt: skip
    return [c["syntax"] for c in reward.last_components]


def test_effect_off_still_judges_a_located_step_against_its_image() -> None:
    image = Image()
    reward = SRLReward(mode="layered", effect_mode="off", inputs=image)
    assert _syntax(reward, ["rg foo src", "./repro.sh", "./other.sh"]) == [0.0, 1.0, 0.0]
    assert image.asked == [("i1", "h", 2)]  # once per located step
    # unlocated steps, and a reward without inputs, use the default set (it has rg) with created files unknown
    assert _syntax(reward, ["rg foo src", "./other.sh"], located=False) == [1.0, 1.0]
    assert _syntax(SRLReward(mode="layered"), ["rg foo src", "./other.sh"]) == [1.0, 1.0]
    srl = SRLReward(mode="srl", inputs=image)
    srl(
        [""],
        [format_output("t", "rg foo src")],
        [EXPERT],
        instance_id=["i1"],
        trajectory_hash=["h"],
        step=[2],
    )
    assert image.asked == [("i1", "h", 2)]  # the srl reward has no syntax layer: nothing asked


def test_without_docker_the_inputs_fall_back_to_the_default_set_and_say_so(monkeypatch, capsys) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    traj = Trajectory("i1", "p", [Step("t", EXPERT)])
    inputs = StepInputs([traj], [])
    reward = SRLReward(mode="layered", inputs=inputs)
    assert reward.syntax_fallback is None
    assert _syntax(reward, ["rg foo src", "rg bar src"]) == [1.0, 1.0]
    assert inputs(None, None, None) == (None, None)
    assert reward.syntax_fallback == NO_DOCKER and "default executable set" in NO_DOCKER
    assert capsys.readouterr().err.count("no Docker engine answers") == 1  # said once


def test_a_step_is_located_by_registered_trajectory_and_known_instance() -> None:
    traj = Trajectory("i1", "p", [Step("t", EXPERT), Step("t", "submit")])
    inputs = StepInputs([traj], [])
    with pytest.raises(ConfigError, match="unknown trajectory_hash 'nope'"):
        inputs.locate("i1", "nope", 0)
    with pytest.raises(ConfigError, match="needs instance_id, trajectory_hash and step"):
        inputs.locate("i1", None, 0)
    with pytest.raises(ConfigError, match="instance 'i1' is not in dataset 'bundled'"):
        inputs.locate("i1", traj.content_hash(), 0)


def test_an_instance_outside_the_task_set_falls_back_to_the_default_set_and_says_so(capsys) -> None:
    traj = Trajectory("demo__pkg0-0", "p", [Step("t", EXPERT)])
    inputs = StepInputs([traj], [])  # an empty task set: no instance is known
    if not inputs._engine():
        pytest.skip("no Docker engine answers (the fallback before this one)")
    reward = SRLReward(mode="layered", inputs=inputs)
    assert _syntax(reward, ["rg foo src"]) == [1.0]  # the default set has rg
    assert inputs("demo__pkg0-0", traj.content_hash(), 0) == (None, None)
    assert "not in the task set" in (reward.syntax_fallback or "")
    assert capsys.readouterr().err.count("not in the task set") == 1  # said once
