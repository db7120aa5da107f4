"""The scripted expert's edit planning: gold patch → unique edits → sed commands that really reproduce the patch."""

import subprocess
from pathlib import Path

import pytest

from swe_srl.errors import TaskError
from swe_srl.trajectories.scripted_edits import Edit, apply_edits, edit_command, plan_edits

BEFORE = """\
def add(a, b):
    return a + b


def scale(xs, k):
    return [x * k for x in xs]  # a/b & [c]


def add_again(a, b):
    return a + b


def sign(s):
    if s == "-":
        j = 0
        k = 1
    elif s == "+":
        j = 0
        k = 1
    else:
        j = 0
        k = 1

    return j + k
"""


def _git_patch(tmp_path: Path, before: str, after: str, name: str = "m.py") -> str:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / name).write_text(before)
    subprocess.run(["git", "-C", str(tmp_path), "add", "-A"], check=True)
    (tmp_path / name).write_text(after)
    patch = subprocess.run(
        ["git", "-C", str(tmp_path), "diff"], capture_output=True, text=True, check=True
    ).stdout
    (tmp_path / name).write_text(before)
    return patch


CASES = [
    # one-line change in a unique line with sed-special characters (/ & [ ] *)
    ("    return [x * k for x in xs]  # a/b & [c]", "    return [x * k / 1 for x in xs]  # a/b & [d]"),
    # one-line change whose text also occurs elsewhere: the edit needs context or a line address
    ("def add_again(a, b):\n    return a + b", "def add_again(a, b):\n    return a - b"),
    # an inserted line: old text must include context
    ("def scale(xs, k):\n", "def scale(xs, k):\n    k = float(k)\n"),
    # a repeated two-line block made unique only by the blank line after it: old must keep that newline
    ("        k = 1\n\n    return", "        k = 2\n\n    return"),
    # indentation-only change of one line: sed on the stripped text would be a no-op, so not a sed job
    ("    return [x * k for x in xs]", "        return [x * k for x in xs]"),
    # trailing whitespace removed from one line
    ("def add(a, b):\n", "def add(a, b):  \n"),
]


@pytest.mark.parametrize(("old", "new"), CASES)
@pytest.mark.parametrize("style", ["sed", "editor"])
def test_plan_reproduces_patch(tmp_path: Path, old: str, new: str, style: str) -> None:
    after = BEFORE.replace(old, new)
    patch = _git_patch(tmp_path, BEFORE, after)
    read = lambda p: (tmp_path / p).read_text()  # noqa: E731
    edits = plan_edits(patch, read)
    assert apply_edits(edits, read) == {"m.py": after}
    for edit in edits:
        assert read(edit.path).count(edit.old) == 1
        command = edit_command(edit, style, read(edit.path))
        if command.startswith("sed "):  # run sed for real: it must produce exactly the gold text
            subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True)
        else:
            assert command.startswith("str_replace_editor str_replace /testbed/m.py --old_str")
            (tmp_path / edit.path).write_text(read(edit.path).replace(edit.old, edit.new, 1))
    assert (tmp_path / "m.py").read_text() == after


def test_one_line_detection() -> None:
    # same indentation, one line each: sed
    assert Edit("a.py", "    x = 1", "    x = 2").one_line
    # indentation changes: not a sed job
    assert not Edit("a.py", "    x = 1", "x = 2").one_line
    # two lines: not a sed job
    assert not Edit("a.py", "x = 1\ny = 2", "x = 2\ny = 2").one_line
    # more indentation, same text: sed on the stripped text would change nothing
    assert not Edit("a.py", "    x = 1", "        x = 1").one_line
    # trailing spaces differ: not a sed job
    assert not Edit("a.py", "    x = 1  ", "    x = 2").one_line


def test_added_file_and_binary(tmp_path: Path) -> None:
    patch = "diff --git a/new.py b/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+x = 1\n+y = 2\n"
    (edit,) = plan_edits(patch, lambda p: "")
    assert (edit.kind, edit.path, edit.new) == ("create", "new.py", "x = 1\ny = 2\n")
    binary = "diff --git a/b.bin b/b.bin\nindex 1..2 100644\nBinary files a/b.bin and b/b.bin differ\n"
    with pytest.raises(TaskError, match="binary"):
        plan_edits(binary, lambda p: "")
