"""Mutation operators, fix diffs that apply with git, mutation checks and bug-report problem statements."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from swe_srl.errors import TaskError
from swe_srl.synth.mutations import OPERATORS, apply_site, find_sites, locate, unified_diff
from swe_srl.synth.synthesis import (
    Library,
    LocalRunner,
    TaskRecipe,
    candidate_recipes,
    check_mutation,
    problem_statement,
    synthesize,
)

SOURCE = '''"""Module doc."""


def clamp(value, low, high):
    """Doc."""
    total = 0
    if value < low:
        return low
    while value > high:
        value = max(value - 1, high)
    total += value
    return total + 0


class Box:
    def ok(self, flag=True):
        label = "box"
        return flag and label
'''


@pytest.mark.parametrize(
    ("qualname", "operator", "occurrence", "expected"),
    [
        ("clamp", "flip_comparison", 0, "if value >= low:"),  # < becomes >=
        ("clamp", "off_by_one", 1, "value - 2"),  # integer constant + 1 (2nd int)
        ("clamp", "negate_condition", 0, "if not (value < low):"),  # condition wrapped in not (...)
        (
            "clamp",
            "remove_statement",
            0,
            'def clamp(value, low, high):\n    """Doc."""\n    if value',
        ),  # total = 0 gone
        ("clamp", "swap_arguments", 0, "max(high, value - 1)"),  # first two positional args swapped
        ("Box.ok", "change_constant", 0, "flag=False"),  # bool flipped
        ("Box.ok", "change_constant", 1, "label = 'bo'"),  # string shortened
        ("clamp", "wrong_variable", 0, "if low < low:"),  # a local read replaced by another local
    ],
)
def test_each_operator(qualname: str, operator: str, occurrence: int, expected: str) -> None:
    assert expected in apply_site(SOURCE, locate(SOURCE, qualname, operator, occurrence))


def test_sites_cover_every_operator_and_are_deterministic() -> None:
    sites = find_sites(SOURCE)
    assert {s.operator for s in sites} == set(OPERATORS)
    assert sites == find_sites(SOURCE)
    assert all(s.qualname in ("clamp", "Box.ok") for s in sites)  # module-level code is never mutated


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("clamp", "rename", 0), "unknown mutation operator 'rename'"),  # operator typo
        (("clamp", "flip_comparison", 9), "has 2 flip_comparison site"),  # occurrence out of range
    ],
)
def test_locate_errors(args, message: str) -> None:
    with pytest.raises(TaskError, match=message):
        locate(SOURCE, *args)


def test_fix_diff_applies_with_git(tmp_path: Path) -> None:
    mutated = apply_site(SOURCE, locate(SOURCE, "clamp", "flip_comparison", 1))
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(mutated)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    diff = unified_diff("pkg/m.py", mutated, SOURCE)
    assert diff.startswith("diff --git a/pkg/m.py b/pkg/m.py\n--- a/pkg/m.py\n+++ b/pkg/m.py\n@@")
    subprocess.run(["git", "apply", "-"], cwd=tmp_path, input=diff, text=True, check=True)
    assert (tmp_path / "pkg" / "m.py").read_text() == SOURCE
    assert unified_diff("pkg/m.py", SOURCE, SOURCE) == ""


@pytest.mark.parametrize(
    ("mutated", "expected"),
    [
        ({"a": "FAILED", "b": "PASSED", "c": "PASSED"}, (["a"], ["b", "c"])),  # one test broken: kept
        ({"a": "PASSED", "b": "PASSED", "c": "PASSED"}, None),  # nothing broken: dropped
        ({"a": "FAILED", "b": "ERROR", "c": "FAILED"}, None),  # everything broken (import error): dropped
        ({"a": "FAILED", "b": "PASSED"}, (["a", "c"], ["b"])),  # a test that vanished counts as broken
    ],
)
def test_check_mutation(mutated: dict, expected) -> None:
    clean = {"a": "PASSED", "b": "PASSED", "c": "PASSED", "d": "FAILED"}
    assert check_mutation(clean, mutated) == expected


def test_candidates_deterministic_and_spread(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    lib = Library("demo", "1.0", "o/demo", ("t.py",))
    first = candidate_recipes(lib, tmp_path, ["m.py"], count=7, seed=5)
    assert first == candidate_recipes(lib, tmp_path, ["m.py"], count=7, seed=5)
    assert len({r.operator for r in first}) == 7  # one of each operator before any repeats
    assert isinstance(first[0], TaskRecipe)


def test_problem_statement_reads_like_a_bug_report() -> None:
    log = "FAILED tests/test_x.py::test_clamp_low - AssertionError: assert 5 == 3\n"
    text = problem_statement("demo", ["tests/test_x.py::test_clamp_low"], log, seed=1)
    assert "test_clamp_low" in text and "assert 5 == 3" in text
    assert "m.py" not in text and "@@" not in text  # no fix location
    assert text == problem_statement("demo", ["tests/test_x.py::test_clamp_low"], log, seed=1)


COUNTDOWN = """def countdown(n):
    steps = 0
    while n > 0:
        n -= 1
        steps += 1
    return steps
"""


def test_a_mutation_that_hangs_is_dropped_and_synthesis_goes_on(tmp_path: Path) -> None:
    """Removing ``n -= 1`` loops forever: its test run times out. That candidate is dropped (sqlparse's did stop a
    whole ``swe-srl tasks synth`` with ``TimeoutExpired``); the next one, removing ``steps += 1``, is kept."""
    tree = tmp_path / "src"
    (tree / "countdown").mkdir(parents=True)
    (tree / "countdown" / "__init__.py").write_text(COUNTDOWN)
    (tree / "tests").mkdir()
    (tree / "tests" / "test_countdown.py").write_text(
        "from countdown import countdown\n\n\ndef test_countdown():\n    assert countdown(3) == 3\n\n\n"
        "def test_zero():\n    assert countdown(0) == 0\n"
    )
    lib = Library("countdown", "1.0", "acme/countdown", ("tests",))
    recipes = [
        TaskRecipe(
            f"countdown-m{k}", "countdown", "countdown/__init__.py", "countdown", "remove_statement", k, 0
        )
        for k in (1, 2)
    ]
    assert "n -= 1" not in apply_site(COUNTDOWN, locate(COUNTDOWN, "countdown", "remove_statement", 1))
    assert "steps += 1" not in apply_site(COUNTDOWN, locate(COUNTDOWN, "countdown", "remove_statement", 2))
    seen = []
    records = synthesize(lib, tree, LocalRunner(tree, lib.test_files, timeout=5), recipes, tmp_path / "repos",
                         progress=lambda recipe, ok: seen.append((recipe.id, ok)))  # fmt: skip
    assert seen == [("countdown-m1", False), ("countdown-m2", True)]
    assert [r["instance_id"] for r in records] == ["countdown-m2"]
    assert records[0]["FAIL_TO_PASS"] == ["tests/test_countdown.py::test_countdown"]
    assert records[0]["PASS_TO_PASS"] == ["tests/test_countdown.py::test_zero"]
