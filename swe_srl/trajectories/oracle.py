"""Oracle file contents (the files the gold patch touches, at ``base_commit``) read from local repository clones.

Kept apart from :mod:`swe_srl.trajectories.decompose`, which stays pure and takes the mapping this builds.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path

from swe_srl.errors import TaskError
from swe_srl.tasks import Instance


def find_repo(instance: Instance, repos_dir: Path) -> Path:
    """The clone of ``instance.repo`` under ``repos_dir`` (``owner__name``, ``name`` or ``owner/name``)."""
    owner, _, name = instance.repo.partition("/")
    for candidate in (repos_dir / f"{owner}__{name}", repos_dir / name, repos_dir / owner / name):
        if (candidate / ".git").exists():
            return candidate
    raise TaskError(
        f"{instance.instance_id}: no git clone of {instance.repo} under {repos_dir} "
        f"(expected {repos_dir / f'{owner}__{name}'} or {repos_dir / name}); clone it there or drop --oracle-files"
    )


def file_at_commit(repo: Path, commit: str, path: str) -> str | None:
    """A file's text at ``commit``, or None when the file does not exist there (a file the patch adds)."""
    result = subprocess.run(
        ["git", "-C", str(repo), "show", f"{commit}:{path}"], capture_output=True, check=False
    )
    if result.returncode != 0:
        return None
    return result.stdout.decode("utf-8", errors="replace")


def oracle_contents(instances: Iterable[Instance], repos_dir: Path) -> dict[str, dict[str, str]]:
    """instance_id → {path: content at base_commit} for the files the gold patch touches (new files: empty)."""
    contents: dict[str, dict[str, str]] = {}
    for instance in instances:
        repo = find_repo(instance, repos_dir)
        contents[instance.instance_id] = {
            path: file_at_commit(repo, instance.base_commit, path) or "" for path in instance.oracle_files
        }
    return contents
