"""SEARCH/REPLACE answers (core/search_replace.py, core/diff_edits.py): parsing, the apply rules, the patch, and
the gold patch written back as edits; table tests on real unified diffs (applied with git)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from swe_srl.core.diff_edits import diff_to_edits
from swe_srl.core.search_replace import Edit, apply_edits, format_edits, make_patch, parse_edits

BASE = {
    "pkg/core.py": "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n",
    "pkg/util.py": "X = 1\nY = 2",
}


def _answer(*blocks: str, think: str = "<think>\nreasoning\n</think>\n") -> str:
    return think + "<solution>\n" + "\n".join(f"```python\n{b}\n```" for b in blocks) + "\n</solution>"


def _block(path: str, search: str, replace: str) -> str:
    return f"### {path}\n<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE"


FIX = _block("pkg/core.py", "def add(a, b):\n    return a - b", "def add(a, b):\n    return a + b")


def _apply(output: str, **options) -> tuple[str, list[str], str | None]:
    parsed = parse_edits(output)
    if parsed.problem:
        return "", parsed.notes, parsed.problem
    applied = apply_edits(parsed.edits, BASE, is_test=lambda p: "tests/" in p, **options)
    patch = "" if applied.problem else make_patch(applied.new, BASE)
    return patch, parsed.notes + applied.notes, applied.problem


def test_a_well_formed_answer_gives_a_patch_git_applies(tmp_path: Path) -> None:
    patch, notes, problem = _apply(_answer(FIX))
    assert problem is None and notes == []
    for path, text in BASE.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "apply", "-"], input=patch, text=True, check=True)
    assert "return a + b" in (tmp_path / "pkg/core.py").read_text()
    assert (tmp_path / "pkg/core.py").read_text().count("return a - b") == 1


@pytest.mark.parametrize(
    ("output", "problem_part"),
    [
        ("I would change add() to use +.", "no complete SEARCH/REPLACE edit"),
        (_answer("### pkg/core.py\n<<<<<<< SEARCH\ndef add(a, b):\n>>>>>>> REPLACE"), "lacks its ======="),
        (_answer("### pkg/core.py\n<<<<<<< SEARCH\nx\n=======\ny"), "lacks its"),
        (_answer("<<<<<<< SEARCH\nX = 1\n=======\nX = 3\n>>>>>>> REPLACE"), "names no file"),
        ("<think>\nstill thinking when the budget ran out", "never closed"),
        ("", "no complete SEARCH/REPLACE edit"),
    ],
    ids=["prose", "no-divider", "no-replace-marker", "no-path", "unclosed-think", "empty"],
)
def test_malformed_answers_give_no_patch_and_say_why(output: str, problem_part: str) -> None:
    patch, _, problem = _apply(output)
    assert patch == "" and problem is not None and problem_part in problem


def test_a_malformed_block_is_skipped_and_the_good_one_kept() -> None:
    bad = "### pkg/util.py\n<<<<<<< SEARCH\nX = 1\n>>>>>>> REPLACE"
    patch, notes, problem = _apply(_answer(bad, FIX))
    assert problem is None and "return a + b" in patch and any("lacks its" in n for n in notes)


@pytest.mark.parametrize(
    ("block", "note"),
    [
        (_block("pkg/core.py", "def mul(a, b):", "def mul(a, b):  # x"), "matches no lines"),
        (_block("pkg/core.py", "    return a -", "    return a +"), "matches no lines"),
        (_block("tests/test_core.py", "", "def test_x():\n    pass"), "a test file"),
        (_block("../outside.py", "", "x = 1"), "outside the repository"),
        (_block("/etc/passwd", "root", "toor"), "outside the repository"),
        (_block("pkg/../../escape.py", "", "x = 1"), "outside the repository"),
        (_block("pkg/other.py", "a", "b"), "not one of the files shown"),
    ],
    ids=["no-match", "partial-line", "test-file", "dotdot", "absolute", "normalized-escape", "not-shown"],
)
def test_edits_that_cannot_apply_are_dropped_with_a_note(block: str, note: str) -> None:
    patch, notes, problem = _apply(_answer(block, FIX))
    assert problem is None and any(note in n for n in notes), notes
    assert [line for line in patch.splitlines() if line.startswith("+++")] == ["+++ b/pkg/core.py"]


def test_a_search_matching_twice_is_skipped_only_with_exactly_once() -> None:
    twice = _block("pkg/core.py", "    return a - b", "    return b - a")
    default, _, _ = _apply(_answer(twice))
    assert default.count("+    return b - a") == 2  # Agentless-mini replaces every occurrence
    patch, notes, problem = _apply(_answer(twice), exactly_once=True)
    assert patch == "" and problem is None and any("matches 2 places" in n for n in notes)


def test_a_result_that_does_not_parse_gives_no_patch() -> None:
    broken = _block("pkg/core.py", "def add(a, b):", "def add(a, b)")
    patch, _, problem = _apply(_answer(broken))
    assert patch == "" and "no longer parses" in (problem or "")


def test_blank_line_only_changes_give_no_patch() -> None:
    blank = _block(
        "pkg/core.py", "    return a - b\n\n\ndef sub(a, b):", "    return a - b\n\ndef sub(a, b):"
    )
    assert _apply(_answer(blank))[2] == "the edits change blank lines only"


def test_solution_tag_is_optional_and_fences_inside_edits_are_content() -> None:
    doc = _block("pkg/util.py", "X = 1", 'X = 1\n"""Example:\n```\nX\n```\n"""')
    patch, _, problem = _apply(f"Here is the fix.\n```python\n{doc}\n```")
    assert problem is None and "+```" in patch


def test_an_empty_search_creates_a_file_only_where_allowed() -> None:
    edit = Edit("pkg/new.py", (), ("Z = 3",))
    assert apply_edits([edit], BASE, creatable=lambda p: True).new == {"pkg/new.py": "Z = 3\n"}
    assert apply_edits([edit], BASE).new == {}
    patch = make_patch({"pkg/new.py": "Z = 3\n"}, BASE)
    assert "new file mode 100644" in patch and "--- /dev/null" in patch


GOLD_BASE = "".join(f"def f{k}(x):\n    return x\n\n\n" for k in range(8)) + "VALUE = 1"


@pytest.mark.parametrize(
    "changes",
    [
        {1: "    return x + 1"},  # one hunk whose lines repeat elsewhere: widened until unique
        {0: "    return -x", 2: "    return 2 * x"},  # neighbouring hunks: merged into one edit
        {1: "    return x + 1", 6: "    return x - 6"},  # far apart: two edits
        {8: "VALUE = 2"},  # the last line, without a final newline
    ],
)
def test_a_diff_written_as_edits_reproduces_it(changes: dict[int, str]) -> None:
    lines = GOLD_BASE.split("\n")
    for k, new in changes.items():
        index = 8 * 4 if k == 8 else 4 * k + 1
        lines[index] = new
    after = "\n".join(lines)
    patch = make_patch({"m.py": after}, {"m.py": GOLD_BASE}) + make_patch({"n.py": "N = 1\n"}, {})
    edits, left_out = diff_to_edits(patch, {"m.py": GOLD_BASE})
    assert left_out == []
    parsed = parse_edits(format_edits(edits))
    applied = apply_edits(
        parsed.edits, {"m.py": GOLD_BASE}, creatable=lambda p: p == "n.py", exactly_once=True
    )
    assert applied.notes == [] and applied.new == {"m.py": after, "n.py": "N = 1\n"}
