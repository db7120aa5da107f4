"""Oracle windows: the gold patch's hunks located in a real git repository, cut to numbered windows."""

from __future__ import annotations

import subprocess
from pathlib import Path

from swe_srl.benchmark.instances import Instance
from swe_srl.trajectories.oracle import hunk_lines, oracle_contents, oracle_windows, window_text


def _git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout


def _instance(tmp_path: Path) -> Instance:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    lines = [f"line {n}" for n in range(1, 101)]
    (repo / "m.py").write_text("\n".join(lines) + "\n")
    (repo / "other.py").write_text("x = 1\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    lines[29] = "fixed 30"  # line 30 changed
    lines.insert(80, "inserted")  # a pure insertion after line 80
    (repo / "m.py").write_text("\n".join(lines) + "\n")
    (repo / "new.py").write_text("added = True\n")
    _git(repo, "add", "-A")
    patch = _git(repo, "diff", "--cached")
    _git(repo, "reset", "-q", "--hard", base)
    return Instance("t__t-1", "t/t", base, patch, "", "fix it", extra={"repo_dir": str(repo)})


def test_hunks_windows_and_added_files(tmp_path: Path) -> None:
    instance = _instance(tmp_path)
    ranges = hunk_lines(instance.patch)
    assert set(ranges) == {"m.py"}  # the added file has no source lines
    assert ranges["m.py"][0] == (30, 30)
    assert 78 <= ranges["m.py"][1][0] <= 82  # the insertion's neighbourhood
    contents = oracle_contents([instance])["t__t-1"]
    assert set(contents) == {"m.py"}  # new.py does not exist at base_commit
    windows = oracle_windows(instance, contents, context=3)["m.py"]
    shown = [line for line in windows.splitlines() if not line.startswith("[...")]
    assert "30| line 30" in windows and " 27| line 27" in windows and " 33| line 33" in windows
    assert "line 26\n" not in windows and windows.startswith("[... lines 1-26 omitted ...]")
    assert windows.endswith("omitted ...]") and len(shown) <= 2 * 7
    assert len(windows) < len(contents["m.py"])


def test_window_text_merges_overlaps() -> None:
    text = "\n".join(f"l{n}" for n in range(1, 21))
    out = window_text(text, [(5, 5), (8, 8)], context=2)
    assert out.splitlines() == [
        "[... lines 1-2 omitted ...]",
        *[f"{n:>2}| l{n}" for n in range(3, 11)],
        "[... lines 11-20 omitted ...]",
    ]
