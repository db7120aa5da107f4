"""What the one-generation protocols show of a repository at the instance's base commit, read with git from the
instance's clone (``extra["repo_dir"]`` of bundled tasks, else ``--repos-dir`` or the repos cache): file contents
and the listing of its Python files (test files left out: a model patch may not edit them)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.verdicts import is_test_file
from swe_srl.errors import TaskError
from swe_srl.trajectories.oracle import file_at_commit, instance_repo


class BaseTree:
    """The repository of ``instance`` at its base commit: every path, the Python listing, file contents."""

    def __init__(self, instance: Instance, repos_dir: str | Path | None = None) -> None:
        self.instance = instance
        self.repo = instance_repo(instance, Path(repos_dir) if repos_dir else None)
        proc = subprocess.run(
            ["git", "-C", str(self.repo), "ls-tree", "-r", "-z", "--name-only", instance.base_commit],
            capture_output=True,
            check=False,
        )
        if proc.returncode != 0:
            why = proc.stderr.decode(errors="replace").strip()
            raise TaskError(
                f"{instance.instance_id}: cannot list {self.repo} at {instance.base_commit}: {why}"
            )
        self.paths = {p for p in proc.stdout.decode("utf-8", errors="replace").split("\0") if p}

    def listing(self) -> list[str]:
        """The Python files a fix may edit (test files left out), sorted."""
        return sorted(p for p in self.paths if p.endswith(".py") and not self.is_test(p))

    def is_test(self, path: str) -> bool:
        return is_test_file(path, self.instance)

    def creatable(self, path: str) -> bool:
        """A new file may be written at ``path``: nothing is there at base (nor a folder of that name)."""
        return path not in self.paths and not any(p.startswith(path + "/") for p in self.paths)

    def contents(self, paths: list[str]) -> dict[str, str]:
        """path → text at base, for the paths that exist there (in the order given)."""
        out = {}
        for path in paths:
            if path in self.paths:
                text = file_at_commit(self.repo, self.instance.base_commit, path)
                if text is not None:
                    out[path] = text
        return out
