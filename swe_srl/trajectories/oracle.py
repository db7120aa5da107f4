"""Oracle file contents (the files the gold patch touches, at ``base_commit``) read from local repository clones.

Kept apart from :mod:`swe_srl.trajectories.decompose`, which stays pure and takes the mapping this builds.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.repos import repo_source


def instance_repo(instance: Instance, repos_dir: Path | None = None) -> Path:
    """The git repository holding ``instance.base_commit``: ``extra["repo_dir"]`` (bundled/synthesized tasks), else
    a clone from ``repos_dir`` or the repos cache (:func:`swe_srl.benchmark.repos.repo_source`, which names the layouts)."""
    if instance.extra.get("repo_dir"):
        return Path(instance.extra["repo_dir"])

    return repo_source(instance.repo, repos_dir)


def file_at_commit(repo: Path, commit: str, path: str) -> str | None:
    """A file's text at ``commit``, or None when the file does not exist there (a file the patch adds)."""
    result = subprocess.run(
        ["git", "-C", str(repo), "show", f"{commit}:{path}"], capture_output=True, check=False
    )
    if result.returncode != 0:
        return None
    return result.stdout.decode("utf-8", errors="replace")


def oracle_contents(
    instances: Iterable[Instance], repos_dir: Path | None = None
) -> dict[str, dict[str, str]]:
    """instance_id → {path: content at base_commit} of the files the gold patch touches. Files the patch adds do
    not exist at base and are left out, exactly as ``SWEEnv(oracle_files=True)`` leaves them out of its prompt."""
    contents: dict[str, dict[str, str]] = {}
    for instance in instances:
        repo = instance_repo(instance, repos_dir)
        files = {path: file_at_commit(repo, instance.base_commit, path) for path in instance.oracle_files}
        contents[instance.instance_id] = {path: text for path, text in files.items() if text is not None}
    return contents
