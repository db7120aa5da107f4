"""SWE-agent's commands in harness/ (open, goto, edit…), run as real subprocesses with harness/ on PATH."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from swe_srl.core.actions import is_submit
from swe_srl.trajectories.formats import swe_agent_action
from swe_srl.trajectories.importers import import_trajectories

HARNESS = Path(__file__).resolve().parents[2] / "harness"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "trajectories"
TOOLS = (
    "open",
    "goto",
    "scroll_up",
    "scroll_down",
    "create",
    "edit",
    "search_dir",
    "search_file",
    "find_file",
)
CALC = "def add(a, b):\n    return a - b\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "calc.py").write_text(CALC)
    (root / "pkg" / "big.py").write_text("".join(f"x{n} = {n}\n" for n in range(1, 251)))
    (root / ".hidden").mkdir()
    (root / ".hidden" / "calc.py").write_text(CALC)
    return root


def sh(repo: Path, command: str) -> subprocess.CompletedProcess[str]:
    """``bash -c command`` in ``repo`` with harness/ first on PATH and a private tool state."""
    env = {
        **os.environ,
        "PATH": f"{HARNESS}{os.pathsep}{os.environ['PATH']}",
        "SWE_SRL_TOOL_STATE": str(repo.parent / "state"),
    }
    return subprocess.run(
        ["bash", "-c", command], cwd=repo, env=env, capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize("name", TOOLS)
def test_tools_are_python39_executables(name: str) -> None:
    for path in (HARNESS / name, HARNESS / "swe_agent_tools.py"):
        text = path.read_text()
        assert text.startswith("#!/usr/bin/env python3\n") and os.access(path, os.X_OK)
        ast.parse(text, feature_version=(3, 9))


WINDOWS = [
    # open without a line: first 100 lines, the rest counted below
    ("open pkg/big.py", "[File: {repo}/pkg/big.py (250 lines total)]\n1:x1 = 1\n", "(150 more lines below)"),
    # open at a line: the line sits 16 lines under the top of the window (SWE-agent's WINDOW/6 offset)
    ("open pkg/big.py 120", "(104 more lines above)\n105:x105 = 105\n", "(46 more lines below)"),
    # goto near the end: the window is clamped to the last 100 lines
    ("open pkg/big.py && goto 250", "(150 more lines above)\n151:x151 = 151\n", "250:x250 = 250"),
    # scroll_down moves by 98 lines (2 lines of overlap)
    ("open pkg/big.py && scroll_down", "(98 more lines above)\n99:x99 = 99\n", "(52 more lines below)"),
    # scroll_up from the end moves back by 98
    ("open pkg/big.py 250 && scroll_up", "(52 more lines above)\n53:x53 = 53\n", "(98 more lines below)"),
    # a short file: every line, no counters
    ("open calc.py", "[File: {repo}/calc.py (2 lines total)]\n1:def add(a, b):\n2:    return a - b", ""),
    # create makes a one-blank-line file and opens it
    ("create new/t.py", "[File: {repo}/new/t.py (1 lines total)]\n1:\n", ""),
]


@pytest.mark.parametrize(("command", "head", "tail"), WINDOWS)
def test_windows(repo: Path, command: str, head: str, tail: str) -> None:
    result = sh(repo, command)
    assert result.returncode == 0, result.stdout
    assert head.format(repo=repo) in result.stdout and result.stdout.rstrip().endswith(tail)


SEARCHES = [
    # search_dir counts matches per file and skips hidden directories
    (
        'search_dir "a - b"',
        'Found 1 matches for "a - b" in {repo}:\n{repo}/calc.py (1 matches)\nEnd of matches',
    ),
    # search_dir in a given directory, nothing found
    ("search_dir return pkg", 'No matches found for "return" in {repo}/pkg'),
    # search_file on the open file: "Line N:text"
    (
        "open calc.py >/dev/null && search_file def",
        'Found 1 matches for "def" in {repo}/calc.py:\nLine 1:def add',
    ),
    # find_file by glob, below the current directory, hidden ones included as find does
    ("find_file big.py", 'Found 1 matches for "big.py" in {repo}:\n{repo}/pkg/big.py'),
]


@pytest.mark.parametrize(("command", "expected"), SEARCHES)
def test_searches(repo: Path, command: str, expected: str) -> None:
    result = sh(repo, command)
    assert result.returncode == 0 and expected.format(repo=repo) in result.stdout, result.stdout


ERRORS = [
    # goto, scroll and edit need an open file
    ("goto 3", "No file open. Use the open command first."),
    ("edit 1:1 <<'E'\nx\nE", "No file open. Use the open command first."),
    # open refuses directories and missing files
    ("open pkg", "Error: pkg is a directory. You can only open files."),
    ("open nope.py", "File nope.py not found"),
    # a bad line number
    ("open calc.py x", "Error: <line_number> must be a number"),
    ("open calc.py && goto 9", "Error: <line> must be less than or equal to 2"),
    # edit without a heredoc would read /dev/null and delete lines: refused
    ("open calc.py && edit 2:2 </dev/null", "edit reads the replacement lines from stdin"),
    # a malformed range
    ("open calc.py && edit 2-2 <<'E'\nx\nE", "Usage: edit <start_line>:<end_line>"),
    # search_file without an open file or with a missing one
    ("search_file x", "No file open. Use the open command first."),
    ("search_file x nope.py", "Error: File name nope.py not found."),
]


@pytest.mark.parametrize(("command", "message"), ERRORS)
def test_errors_exit_1(repo: Path, command: str, message: str) -> None:
    result = sh(repo, command)
    assert result.returncode == 1 and message in result.stdout, result.stdout
    assert (repo / "calc.py").read_text() == CALC


def test_edit_replaces_inserts_and_deletes(repo: Path) -> None:
    result = sh(repo, "open calc.py >/dev/null && edit 2:2 <<'end_of_edit'\n    return a + b\nend_of_edit")
    assert result.returncode == 0 and "2:    return a + b\nFile updated." in result.stdout
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    sh(repo, "edit 3:2 <<'E'\n\n\ndef sub(a, b):\n    return a - b\nE")  # end = start - 1: insertion
    assert (repo / "calc.py").read_text().endswith("a + b\n\n\ndef sub(a, b):\n    return a - b\n")
    sh(repo, swe_agent_action("edit 3:6\nend_of_edit"))  # no replacement lines: a deletion
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"


def test_edit_with_syntax_error_is_reverted(repo: Path) -> None:
    result = sh(repo, "open calc.py >/dev/null && edit 2:2 <<'E'\n  return (\nE")
    assert result.returncode == 1 and "- E999 SyntaxError" in result.stdout
    assert (
        "This is the original code before your edit" in result.stdout and "NOT been applied" in result.stdout
    )
    assert (repo / "calc.py").read_text() == CALC


ACTIONS = [
    # a one-line replacement becomes a quoted heredoc
    ("edit 2:2\n    return a + b\nend_of_edit", "edit 2:2 <<'end_of_edit'\n    return a + b\nend_of_edit"),
    # no replacement lines (deletion): an empty pipe, since bash reads an empty heredoc from /dev/null
    ("edit 3:5\nend_of_edit", "edit 3:5 < <(:)"),
    # a blank replacement line is kept
    ("edit 1:1\n\nend_of_edit", "edit 1:1 <<'end_of_edit'\n\nend_of_edit"),
    # content holding the delimiter: another one is chosen
    ("edit 1:1\nend_of_edit\nend_of_edit", "edit 1:1 <<'end_of_edit1'\nend_of_edit\nend_of_edit1"),
    # not an edit block: unchanged
    ("open calc.py 3", "open calc.py 3"),
    ("edit 1:1\nno terminator", "edit 1:1\nno terminator"),
]


@pytest.mark.parametrize(("action", "expected"), ACTIONS)
def test_swe_agent_action(action: str, expected: str) -> None:
    assert swe_agent_action(action) == expected


def test_edit_heredoc_keeps_shell_syntax_literal(repo: Path) -> None:
    body = "    return f'{a + b}' + \"$HOME\" + '`x`' + '\\n'"
    action = swe_agent_action(f"edit 2:2\n{body}\nend_of_edit")
    assert sh(repo, f"open calc.py >/dev/null && {action}").returncode == 0
    assert (repo / "calc.py").read_text() == f"def add(a, b):\n{body}\n"


@pytest.mark.parametrize("name", ["toy__calc-1.traj", "nebius.json"])
def test_imported_swe_agent_trajectory_replays(repo: Path, name: str) -> None:
    (traj,) = import_trajectories(str(FIXTURES / name))
    shutil.rmtree(repo / ".hidden")  # the recorded `find` saw only calc.py
    for step in traj.steps:
        if is_submit(step.action) or "pytest" in step.action:
            continue
        result = sh(repo, step.action)
        assert result.returncode == 0, (step.action, result.stdout, result.stderr)
        recorded = step.observation.replace("/testbed", str(repo)).strip()
        assert result.stdout.startswith(recorded.split("\n")[0]), (step.action, result.stdout, recorded)
        if recorded.startswith("[File:"):  # open and edit: the whole window
            assert result.stdout.strip() == recorded
    if name.endswith(".traj"):
        assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
