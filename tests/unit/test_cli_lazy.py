"""The CLI imports a command's module only when it runs: ``swe-srl --help`` and ``swe-srl reward`` load neither
Docker, Gymnasium nor the training stack (the real CLI in a subprocess, its ``sys.modules`` read at exit); the
registry's help lines are the commands' own, and the groups keep their names. Timings: bench/cli_startup.py."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from swe_srl.cli.app import COMMANDS, app
from swe_srl.cli.lazy import Lazy

HEAVY = ("docker", "gymnasium", "torch", "transformers", "trl", "openai", "swe_srl.env",
         "swe_srl.infra.sandbox.docker")  # fmt: skip
COMMAND_MODULES = sorted(
    {
        target.split(":")[0]
        for entry in COMMANDS.values()
        for target in (
            [entry.target] if isinstance(entry.target, str) else [e.target for e in entry.target.values()]
        )
    }
)
RUN_AND_LIST = """
import atexit, json, signal, sys
atexit.register(lambda: sys.stderr.write("MODULES " + json.dumps(sorted(sys.modules)) + "\\n"))
atexit.register(lambda: sys.stderr.write(f"SIGTERM {signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL}\\n"))
sys.argv = ["swe-srl", *sys.argv[1:]]
from swe_srl.cli.app import main
main()
"""


def _run(*args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    proc = subprocess.run(
        [sys.executable, "-c", RUN_AND_LIST, *args], capture_output=True, text=True, timeout=120
    )
    line = [x for x in proc.stderr.splitlines() if x.startswith("MODULES ")][-1]
    return proc, set(json.loads(line.removeprefix("MODULES ")))


def _loaded(modules: set[str], names: tuple[str, ...] | list[str]) -> list[str]:
    return sorted(m for m in modules for n in names if m == n or m.startswith(n + "."))


def test_help_lists_every_command_and_imports_no_command_module() -> None:
    proc, modules = _run("--help")
    assert proc.returncode == 0, proc.stderr
    for name in COMMANDS:
        assert f" {name} " in proc.stdout, name
    assert not _loaded(modules, HEAVY)
    assert not _loaded(modules, COMMAND_MODULES), "--help imported a command module"
    assert "SIGTERM True" in proc.stderr  # main installs the handler first (live sandboxes close on SIGTERM)


def test_reward_imports_its_own_stack_only() -> None:
    proc, modules = _run("reward", "--expert", "grep -rn foo src", "--action", "rg foo src", "--json")
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert 0.0 < record["total"] <= 1.0 and record["action_type"] == "location"
    assert not _loaded(modules, HEAVY)
    assert _loaded(modules, COMMAND_MODULES) == ["swe_srl.cli.rewards"]


def _help_line(command) -> str:
    return inspect.cleandoc(command.help or "").split("\n\n")[0].replace("\n", " ")


@pytest.mark.parametrize("name", list(COMMANDS))
def test_registry_help_is_the_commands_own(name: str) -> None:
    entry = COMMANDS[name]
    command = entry.load(name)
    assert command.name == name and _help_line(command) == entry.help
    if isinstance(entry.target, dict):  # a group spread over modules: each of its commands, too
        for sub, sub_entry in entry.target.items():
            assert isinstance(sub_entry, Lazy) and _help_line(sub_entry.load(sub)) == sub_entry.help


@pytest.mark.parametrize(
    ("group", "commands"),
    [
        ("images", ["base", "build"]),
        ("tasks", ["list", "build", "validate", "synth"]),
        ("trajectories", ["import"]),
        ("expert", ["generate"]),
        ("env", ["demo"]),
    ],
)
def test_groups_keep_their_commands(group: str, commands: list[str]) -> None:
    result = CliRunner().invoke(app, [group, "--help"])
    assert result.exit_code == 0, result.output
    listed = [
        line.split()[1]
        for line in result.output.splitlines()
        if line.startswith("│ ") and len(line.split()) > 2
    ]
    assert [c for c in listed if c in commands] == commands, result.output


def test_a_command_s_options_reach_it_and_an_unknown_command_fails() -> None:
    result = CliRunner().invoke(app, ["images", "build", "--help"])
    assert result.exit_code == 0 and "--image-source" in result.output
    result = CliRunner().invoke(app, ["rewrd"])
    assert result.exit_code == 2 and "No such command 'rewrd'" in result.output
