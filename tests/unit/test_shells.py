"""Shell semantics per agent (core/shells.py): what each importer records, the schema, the prompt and the env's
choice of an episode's shell. The sandbox side runs in tests/docker/test_shell_modes.py."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from swe_srl.core.prompts import PER_ACTION_NOTE, SYSTEM_PROMPT, build_messages, system_prompt
from swe_srl.core.shells import PER_ACTION, PERSISTENT, check_shell
from swe_srl.env.reset import episode_shell
from swe_srl.errors import ConfigError, TrajectoryFormatError
from swe_srl.infra.sandbox.base import SandboxSpec
from swe_srl.trajectories.importers import import_with_stats
from swe_srl.trajectories.sample_file import history_messages, trajectory_record
from swe_srl.trajectories.schema import Step, Trajectory, read_jsonl, write_jsonl

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "trajectories"


def test_each_importer_records_its_agents_shell() -> None:
    """mini-swe-agent runs every action as its own process; SWE-agent, SWE-smith, nebius (SWE-agent runs) and
    OpenHands keep one shell; a native record without the key is persistent."""
    trajs, _ = import_with_stats(str(FIXTURES), skip_bad=True)
    shells = Counter((t.source, t.shell) for t in trajs)
    assert shells[("mini-swe-agent", PER_ACTION)] == 5
    assert {shell for (source, shell) in shells if source != "mini-swe-agent"} == {PERSISTENT}
    assert {source for (source, _) in shells} >= {"swe-agent", "nebius", "openhands", "swe-smith", "native"}


def test_schema_round_trip_and_bad_value(tmp_path) -> None:
    traj = Trajectory("x__y-1", "p", [Step("t", "ls", "a.py", 0)], shell=PER_ACTION)
    write_jsonl(tmp_path / "t.jsonl", [traj])
    (back,) = read_jsonl(tmp_path / "t.jsonl")
    assert back.shell == PER_ACTION and back.to_dict() == traj.to_dict()
    plain = Trajectory("x__y-1", "p", [Step("t", "ls", "a.py", 0)])
    assert plain.shell == PERSISTENT
    # the cache key of a persistent trajectory is what it always was; another shell is another replay
    assert plain.content_hash() != traj.content_hash()
    record = {**traj.to_dict(), "shell": "fresh"}
    (tmp_path / "bad.jsonl").write_text(json.dumps(record) + "\n")
    with pytest.raises(TrajectoryFormatError, match=r"bad\.jsonl:1: .*shell='fresh'.*persistent, per-action"):
        list(read_jsonl(tmp_path / "bad.jsonl"))


def test_bad_shell_is_one_clear_error() -> None:
    with pytest.raises(ConfigError, match=r"--shell='login': choose one of persistent, per-action"):
        check_shell("login", "--shell")
    with pytest.raises(ConfigError, match="SandboxSpec.shell"):
        SandboxSpec("img", shell="per-command")


def test_prompt_says_how_commands_run() -> None:
    assert (
        system_prompt() == SYSTEM_PROMPT == build_messages("p", [])[0]["content"]
    )  # the default is unchanged
    per_action = build_messages("p", [], shell=PER_ACTION)[0]["content"]
    assert PER_ACTION_NOTE in per_action and per_action.replace(PER_ACTION_NOTE + "\n", "") == SYSTEM_PROMPT


def test_samples_of_a_per_action_trajectory_say_so() -> None:
    traj = Trajectory(
        "x__y-1", "p", [Step("t", "cd src", "", 0), Step("t", "ls", "a.py", 0)], shell=PER_ACTION
    )
    record = trajectory_record(traj, 0, 2000, False)
    assert PER_ACTION_NOTE in history_messages(record)[0]["content"]
    traj.shell = PERSISTENT
    assert "shell" not in trajectory_record(traj, 0, 2000, False)  # persistent sample files are unchanged


def test_episode_shell_rules() -> None:
    traj = Trajectory("x__y-1", "p", [Step("t", "ls")], shell=PER_ACTION)
    assert episode_shell(None, None, PERSISTENT) == PERSISTENT  # the env's own
    assert episode_shell(PER_ACTION, None, PERSISTENT) == PER_ACTION  # the reset option
    assert episode_shell(None, traj, PERSISTENT) == PER_ACTION  # the trajectory's, whatever the env's
    with pytest.raises(ConfigError, match="ran its actions 'per-action'"):
        episode_shell(PERSISTENT, traj, PERSISTENT)
    with pytest.raises(ConfigError, match="reset option shell='bash'"):
        episode_shell("bash", None, PERSISTENT)


@pytest.mark.parametrize("command", [["expert", "generate"], ["eval", "--policy", "gold"]])
def test_unknown_shell_on_the_command_line_is_one_line(command: list[str], tmp_path: Path) -> None:
    """Exit 2, one line with the value and the choices, nothing written: the check comes before any work."""
    cmd = [sys.executable, "-m", "swe_srl.cli", *command, "--shell", "login", "-o", str(tmp_path / "out")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line == "error: --shell='login': choose one of persistent, per-action"
    assert not (tmp_path / "out").exists()


def test_unknown_rlvr_shell_is_one_line(tmp_path: Path) -> None:
    """`rlvr.shell` in a config file or a `--set`: the key, where it came from, the value and the choices, from
    load_config (`swe-srl train` calls it before any work and prints the line)."""
    from swe_srl.train.config import load_config

    config = tmp_path / "rlvr.yaml"
    config.write_text("rlvr:\n  shell: peraction\n", encoding="utf-8")
    choices = "Input should be 'persistent' or 'per-action'"
    with pytest.raises(ConfigError) as file_error:
        load_config(config, stage="rlvr", init="ckpt")
    assert str(file_error.value) == f"invalid value for 'rlvr.shell' in {config}: {choices} (got 'peraction')"
    with pytest.raises(ConfigError) as set_error:
        load_config(None, ["rlvr.shell=login"], stage="rlvr", init="ckpt")
    where = "defaults (with --set rlvr.shell=login)"
    assert str(set_error.value) == f"invalid value for 'rlvr.shell' in {where}: {choices} (got 'login')"
