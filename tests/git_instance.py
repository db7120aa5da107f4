"""A one-commit git repository in a folder and the SWE-bench instance over it (for the protocols' tests)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from swe_srl.benchmark.instances import Instance
from swe_srl.core.search_replace import make_patch

BASE = {
    "pkg/core.py": "def add(a, b):\n    return a - b\n",
    "tests/test_core.py": "def test_add():\n    pass\n",
}
"""The base files: ``add`` subtracts; the gold patch makes it add."""


def git_instance(folder: Path, base: dict[str, str] = BASE) -> Instance:
    """Commit ``base`` in ``folder``; the instance's gold patch fixes ``pkg/core.py``."""
    for path, text in base.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    git = ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    commit = subprocess.run(
        [*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    patch = make_patch({"pkg/core.py": "def add(a, b):\n    return a + b\n"}, base)
    return Instance("o__r-1", "o/r", commit, patch, "", "add() subtracts", extra={"repo_dir": str(folder)})
