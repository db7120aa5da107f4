"""What the one-generation protocols show of a repository at the instance's base commit, read with git from the
instance's clone (``extra["repo_dir"]`` of bundled tasks, else ``--repos-dir`` or the repos cache): file contents
and the listing of its Python files (test files left out by Agentless's rule), and the oracle files of ``oracle-edit``."""

from __future__ import annotations

import subprocess
from pathlib import Path

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.verdicts import is_test_file
from swe_srl.core.patches import file_diffs
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
        """The Python files localization may name, sorted: a path with a folder or file name that starts with
        ``test`` is left out, except in pytest's own repository (Agentless-mini's ``localize.py:
        localize_instance`` with ``utils/data.py: filter_out_test_files``)."""
        keep_tests = self.instance.instance_id.startswith("pytest")
        return sorted(p for p in self.paths if p.endswith(".py") and (keep_tests or not _test_like(p)))

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


def _test_like(path: str) -> bool:
    return any(part.startswith("test") for part in path.split("/"))


def oracle_files(instance: Instance) -> list[str]:
    """The files ``oracle-edit`` shows: the Python files the gold patch modifies (not those it adds or removes);
    on SWE-bench Verified this is SWE-RL's ground-truth localization (``resources/sweb_verified_gt_loc.jsonl``)."""
    paths = (d.source for d in file_diffs(instance.patch) if not d.added and not d.removed)
    return list(dict.fromkeys(p for p in paths if p and p.endswith(".py")))
