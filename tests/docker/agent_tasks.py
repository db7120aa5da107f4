"""A tiny task dataset for the agent/eval tests: a two-bug git repo, two SWE-bench-style instances, as JSONL.

Each instance carries ``extra["env"]`` (spec) and ``extra["repo_dir"]`` (local clone), so images build offline
except for ``pip install pytest``; the env image is shared by both instances.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@e",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@e",
}
GIT_ENV |= {"GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z"}
BUGGY = (
    "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a + b\n\n\ndef neg(a):\n    return -a\n"
)
TESTS = {
    "add": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    "mul": "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
}
FIXES = {
    "add": ("return a - b", "return a + b"),
    "mul": ("return a + b\n\n\ndef neg", "return a * b\n\n\ndef neg"),
}
ENV = {"python": "3.11", "pip_packages": ["pytest"], "test_cmd": "pytest -rA", "install": ""}


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout


def _diff_of(repo: Path, path: str, new: str) -> str:
    """The git diff that turns ``path`` (at HEAD) into ``new``, leaving the repo unchanged."""
    target = repo / path
    old = target.read_text() if target.exists() else None
    target.write_text(new)
    _git(repo, "add", "-N", path)
    diff = _git(repo, "diff", "HEAD", "--", path)
    if old is None:
        _git(repo, "rm", "-q", "--cached", path)
        target.unlink()
    else:
        target.write_text(old)
    return diff


def make_tiny_dataset(root: Path) -> Path:
    """Write the repo and ``tiny.jsonl`` under ``root``; returns the JSONL path (reused when present)."""
    out = root / "tiny.jsonl"
    if out.exists():
        return out
    repo = root / "calc-repo"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    (repo / "calc.py").write_text(BUGGY)
    (repo / "test_neg.py").write_text("from calc import neg\n\n\ndef test_neg():\n    assert neg(2) == -2\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    records = []
    for name, (old, new) in FIXES.items():
        records.append(
            {
                "instance_id": f"tiny__calc-{name}",
                "repo": "tiny/calc",
                "base_commit": base,
                "patch": _diff_of(repo, "calc.py", BUGGY.replace(old, new)),
                "test_patch": _diff_of(repo, f"test_{name}.py", TESTS[name]),
                "problem_statement": f"calc.{name}(2, 3) gives the wrong result.",
                "version": "1.0",
                "FAIL_TO_PASS": [f"test_{name}.py::test_{name}"],
                "PASS_TO_PASS": ["test_neg.py::test_neg"],
                "env": {**ENV, "test_files": [f"test_{name}.py", "test_neg.py"]},
                "repo_dir": str(repo),
            }
        )
    out.write_text("".join(json.dumps(r) + "\n" for r in records))
    return out
