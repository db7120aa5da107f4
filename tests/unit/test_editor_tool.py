"""harness/str_replace_editor, run as a real subprocess on a temporary directory."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from swe_srl.trajectories.formats import editor_command

TOOL = Path(__file__).resolve().parents[2] / "harness" / "str_replace_editor"
SOURCE = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "STR_REPLACE_EDITOR_STATE": str(tmp_path / "state")}
    return subprocess.run(
        [sys.executable, str(TOOL), *args], capture_output=True, text=True, env=env, check=False
    )


@pytest.fixture
def src(tmp_path: Path) -> Path:
    path = tmp_path / "repo" / "calc.py"
    path.parent.mkdir()
    path.write_text(SOURCE)
    return path


def test_is_an_executable_python39_script() -> None:
    assert TOOL.read_text().startswith("#!/usr/bin/env python3\n") and os.access(TOOL, os.X_OK)
    ast.parse(TOOL.read_text(), feature_version=(3, 9))


def test_view_file_range_and_directory(tmp_path: Path, src: Path) -> None:
    out = run(tmp_path, "view", str(src)).stdout
    assert out.startswith(f"Here's the result of running `cat -n` on {src}:\n     1\tdef add(a, b):\n")
    out = run(tmp_path, "view", str(src), "--view_range", "5", "-1").stdout
    assert "     5\tdef sub(a, b):\n     6\t    return a - b\n" in out and "     4\t" not in out
    (src.parent / "pkg" / "deep" / "deeper").mkdir(parents=True)
    (src.parent / ".hidden").mkdir()
    out = run(tmp_path, "view", str(src.parent)).stdout
    assert f"{src.parent}/pkg/deep\n" in out and "deeper" not in out and ".hidden" not in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # a relative path is refused with a suggestion
        (["view", "calc.py"], "The path calc.py is not an absolute path, it should start with `/`."),
        # a missing path
        (["view", "{dir}/nope.py"], "The path {dir}/nope.py does not exist. Please provide a valid path."),
        # create never overwrites
        (["create", "{src}", "--file_text", "x"], "File already exists at: {src}. Cannot overwrite files"),
        # old_str must appear verbatim
        (
            ["str_replace", "{src}", "--old_str", "return a * b"],
            "No replacement was performed, old_str `return a * b` did not appear verbatim",
        ),
        # old_str must be unique; the lines are named
        (
            ["str_replace", "{src}", "--old_str", "return a - b"],
            "Multiple occurrences of old_str `return a - b` in lines [2, 6]",
        ),
        # insert_line is bounded by the file
        (
            ["insert", "{src}", "--insert_line", "99", "--new_str", "x"],
            "Invalid `insert_line` parameter: 99. It should be within the range of lines of the file: [0, 7]",
        ),
        # view_range on a directory
        (
            ["view", "{dir}", "--view_range", "1", "2"],
            "The `view_range` parameter is not allowed when `path` points to a directory.",
        ),
        # view_range out of the file
        (
            ["view", "{src}", "--view_range", "3", "99"],
            "Its second element `99` should be smaller than the number of lines in the file: `7`",
        ),
        # nothing to undo
        (["undo_edit", "{src}"], "No edit history found for {src}."),
        # directories only take view
        (
            ["create", "{dir}", "--file_text", "x"],
            "is a directory and only the `view` command can be used on directories",
        ),
    ],
)
def test_errors(tmp_path: Path, src: Path, args: list[str], message: str) -> None:
    fill = {"src": str(src), "dir": str(src.parent)}
    result = run(tmp_path, *(a.format(**fill) for a in args))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("ERROR:\n") and message.format(**fill) in result.stderr
    assert src.read_text() == SOURCE


def test_edit_insert_undo_sequence(tmp_path: Path, src: Path) -> None:
    result = run(
        tmp_path,
        "str_replace",
        str(src),
        "--old_str",
        "def add(a, b):\n    return a - b",
        "--new_str",
        "def add(a, b):\n    return a + b",
    )
    assert result.returncode == 0 and f"The file {src} has been edited." in result.stdout
    assert "     2\t    return a + b\n" in result.stdout
    assert run(tmp_path, "insert", str(src), "--insert_line", "0", "--new_str", '"""Calc."""').returncode == 0
    assert src.read_text() == '"""Calc."""\n' + SOURCE.replace("a - b", "a + b", 1)
    assert "Last edit to" in run(tmp_path, "undo_edit", str(src)).stdout
    assert src.read_text() == SOURCE.replace("a - b", "a + b", 1)
    run(tmp_path, "undo_edit", str(src))
    assert src.read_text() == SOURCE


def test_create_and_delete_with_empty_new_str(tmp_path: Path) -> None:
    path = tmp_path / "new" / "mod.py"
    result = run(tmp_path, "create", str(path), "--file_text", "x = 1\ny = 2\n")
    assert result.stdout == f"File created successfully at: {path}\n" and path.read_text() == "x = 1\ny = 2\n"
    assert run(tmp_path, "str_replace", str(path), "--old_str", "y = 2\n").returncode == 0
    assert path.read_text() == "x = 1\n"


def test_imported_editor_actions_replay_through_bash(tmp_path: Path, src: Path) -> None:
    tool_dir = tmp_path / "bin"
    tool_dir.mkdir()
    (tool_dir / "str_replace_editor").symlink_to(TOOL)
    old = "def sub(a, b):\n    return a - b\n"
    new = "def sub(a, b):\n    # it's '$HOME' \\n `x` -- \"q\"\n    return a - b\n"
    action = editor_command({"command": "str_replace", "path": str(src), "old_str": old, "new_str": new})
    env = {
        **os.environ,
        "PATH": f"{tool_dir}:{os.environ['PATH']}",
        "STR_REPLACE_EDITOR_STATE": str(tmp_path / "s"),
    }
    result = subprocess.run(["bash", "-c", action], capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 0, result.stderr
    assert src.read_text() == SOURCE.replace(old, new)
    dash = editor_command({"command": "str_replace", "path": str(src), "old_str": "-", "new_str": "+"})
    result = subprocess.run(["bash", "-c", dash], capture_output=True, text=True, env=env, check=False)
    assert "Multiple occurrences of old_str `-`" in result.stderr  # values starting with '-' are values
