"""core/patches.py on real ``git diff`` output: renames, added/removed/binary/mode-only files, missing newlines."""

from __future__ import annotations

import difflib
import subprocess
from pathlib import Path

import pytest

from swe_srl.core import patches
from swe_srl.core.patches import clean_patch, drop_sections, file_diffs, patch_paths


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """A repo whose worktree (staged) differs from HEAD in every way a diff can describe."""
    root = tmp_path_factory.mktemp("repo")
    git(root, "init", "-q")
    git(root, "config", "user.email", "t@t")
    git(root, "config", "user.name", "t")
    files = {
        "src/calc.py": "def add(a, b):\n    return a - b\n" + "".join(f"# {i}\n" for i in range(20)),
        "src/old_name.py": "".join(f"line {i}\n" for i in range(40)),
        "docs/gone.txt": "bye\n",
        "run.sh": "echo hi\n",
        "no_newline.txt": "a\nb",
        "with space.txt": "a\n",
        "tést.py": "x = 1\n",
    }
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    (root / "blob.bin").write_bytes(bytes(range(256)))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    (root / "src/calc.py").write_text(files["src/calc.py"].replace("a - b", "a + b"))
    (root / "src/old_name.py").rename(root / "src/new_name.py")
    with (root / "src/new_name.py").open("a") as handle:
        handle.write("one more line\n")
    (root / "docs/gone.txt").unlink()
    (root / "run.sh").chmod(0o755)
    (root / "no_newline.txt").write_text("a\nc")
    (root / "with space.txt").write_text("b\n")
    (root / "tést.py").write_text("x = 2\n")
    (root / "blob.bin").write_bytes(bytes(range(255, -1, -1)))
    (root / "tests").mkdir()
    (root / "tests/test_new.py").write_text("def test_x():\n    assert True\n")
    (root / "empty.txt").write_text("")
    git(root, "add", "-A")
    return root


# path → (source, target, added, removed, binary, number of hunks)
EXPECTED = {
    "blob.bin": ("blob.bin", "blob.bin", False, False, True, 0),
    "docs/gone.txt": ("docs/gone.txt", None, False, True, False, 1),
    "empty.txt": (None, "empty.txt", True, False, False, 0),
    "no_newline.txt": ("no_newline.txt", "no_newline.txt", False, False, False, 1),
    "run.sh": ("run.sh", "run.sh", False, False, False, 0),
    "src/calc.py": ("src/calc.py", "src/calc.py", False, False, False, 1),
    "src/new_name.py": ("src/old_name.py", "src/new_name.py", False, False, False, 1),
    "tests/test_new.py": (None, "tests/test_new.py", True, False, False, 1),
    "tést.py": ("tést.py", "tést.py", False, False, False, 1),
    "with space.txt": ("with space.txt", "with space.txt", False, False, False, 1),
}


@pytest.fixture(scope="module", params=["text", "binary"])
def diff(repo: Path, request) -> str:
    flags = ["--binary"] if request.param == "binary" else []
    return git(repo, "diff", "--cached", "-M", *flags, "HEAD")


def kind(f: patches.FileDiff) -> tuple:
    return (f.source, f.target, f.added, f.removed, f.binary, len(f.hunks))


def test_every_section_of_a_git_diff(diff: str) -> None:
    files = file_diffs(diff)
    assert "".join(f.text for f in files) == diff  # sections are the raw text, nothing lost or added
    assert {f.path: kind(f) for f in files} == EXPECTED
    assert all(f.parsed and f.text.startswith("diff --git ") for f in files)
    renamed = [f for f in files if f.renamed]
    assert [f.paths for f in renamed] == [("src/old_name.py", "src/new_name.py")]


def test_hunks_are_unidiffs(diff: str) -> None:
    (calc,) = [f for f in file_diffs(diff) if f.path == "src/calc.py"]
    (hunk,) = calc.hunks
    assert [line.value for line in hunk if line.is_removed] == ["    return a - b\n"]
    assert [line.value for line in hunk if line.is_added] == ["    return a + b\n"]
    (nonl,) = [f for f in file_diffs(diff) if f.path == "no_newline.txt"]
    assert "".join(str(line) for line in nonl.hunks[0]).count("No newline at end of file") == 2


def test_header_fallback_agrees_with_unidiff(diff: str) -> None:
    """The path and kind a rejected section gets from its git header lines are those unidiff reads."""
    for f in file_diffs(diff):
        fallback = patches._from_headers(f.text)
        assert not fallback.parsed and fallback.text == f.text
        assert kind(fallback)[:5] == kind(f)[:5], f.path


def test_malformed_hunk_keeps_its_section() -> None:
    good = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
    short = "diff --git a/y.py b/y.py\n--- a/y.py\n+++ b/y.py\n@@ -1,5 +1,5 @@\n-a\n+b\n"  # hunk too short
    x, y = file_diffs(good + short)
    assert x.parsed and not y.parsed and (y.source, y.target, y.hunks) == ("y.py", "y.py", ())
    assert drop_sections(good + short, lambda p: p == "x.py") == (short, ["x.py"])


def test_patch_without_trailing_newline() -> None:
    patch = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b"
    (f,) = file_diffs(patch)
    assert f.parsed and f.text == patch and [line.value for line in f.hunks[0] if line.is_added] == ["b"]


def test_patch_paths_and_drop_sections(diff: str) -> None:
    assert patch_paths(diff) == set(EXPECTED) | {"src/old_name.py"}  # both sides of the rename
    kept, dropped = drop_sections(
        "preamble line\n" + diff, lambda p: p == "src/old_name.py" or p.endswith(".bin")
    )
    assert sorted(dropped) == ["blob.bin", "src/new_name.py"]  # the new-side path, whichever side matched
    assert kept.startswith("preamble line\n") and patch_paths(kept) == patch_paths(diff) - {
        "blob.bin",
        "src/old_name.py",
        "src/new_name.py",
    }
    assert drop_sections(diff, lambda p: False) == (diff, [])


def test_clean_patch_drops_tests_and_build_junk(repo: Path, tmp_path: Path) -> None:
    junk = (
        "diff --git a/src/__pycache__/calc.cpython-311.pyc b/src/__pycache__/calc.cpython-311.pyc\n"
        "new file mode 100644\nindex 0000000..1111111\nBinary files /dev/null and "
        "b/src/__pycache__/calc.cpython-311.pyc differ\n"
    )
    diff = git(repo, "diff", "--cached", "--binary", "HEAD")
    cleaned = clean_patch(diff + junk, exclude={"tests/test_new.py"})
    assert patch_paths(cleaned) == patch_paths(diff) - {"tests/test_new.py"}
    # what is left still applies: check it in a copy of the repo at HEAD
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "apply", "-"], input=cleaned, text=True, check=True)
    assert (clone / "src/calc.py").read_text().startswith("def add(a, b):\n    return a + b\n")
    assert not (clone / "tests").exists() and (clone / "src/new_name.py").exists()


def test_plain_unified_diffs_split_per_file() -> None:
    calc = difflib.unified_diff(["x = 1\n"], ["x = 2\n"], "a/calc.py", "b/calc.py")
    # a removed "-- a" line followed by an added "++ b" line looks like a file header; the hunk counts decide
    tricky = "--- a/t.txt\n+++ b/t.txt\n@@ -1 +1 @@\n--- a\n+++ b\n"
    patch = "".join(calc) + tricky
    files = file_diffs(patch)
    assert [(f.source, f.target, f.parsed) for f in files] == [
        ("calc.py", "calc.py", True),
        ("t.txt", "t.txt", True),
    ]
    assert "".join(f.text for f in files) == patch
    assert [line.value for line in files[1].hunks[0]] == ["-- a\n", "++ b\n"]


def test_no_sections() -> None:
    assert file_diffs("") == () and file_diffs("just text\n") == ()
    assert drop_sections("just text\n", lambda p: True) == ("just text\n", [])
