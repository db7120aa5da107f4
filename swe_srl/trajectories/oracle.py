"""Oracle file contents (the files the gold patch touches, at ``base_commit``) read from local repository clones.

Kept apart from :mod:`swe_srl.trajectories.decompose`, which stays pure and takes the mapping this builds.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.repos import repo_source
from swe_srl.core.patches import file_diffs


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


def hunk_lines(patch: str) -> dict[str, list[tuple[int, int]]]:
    """path (at base) → the (first, last) 1-based source lines each hunk of ``patch`` changes (context excluded)."""
    ranges: dict[str, list[tuple[int, int]]] = {}
    for patched in file_diffs(patch):
        if patched.added or patched.source is None:
            continue
        for hunk in patched.hunks:
            changed = [line.source_line_no for line in hunk if line.is_removed]
            if not changed:  # a pure insertion: the lines around where it goes
                before = [line.source_line_no for line in hunk if line.is_context and line.source_line_no]
                anchor = hunk.source_start + max(0, len(before) // 2)
                changed = [anchor]
            ranges.setdefault(patched.source, []).append((min(changed), max(changed)))
    return ranges


def window_text(text: str, ranges: Iterable[tuple[int, int]], context: int) -> str:
    """The lines of ``text`` within ``context`` lines of any range, numbered, gaps marked ``[... lines A-B ...]``."""
    lines = text.splitlines()
    keep: set[int] = set()
    for first, last in ranges:
        keep.update(range(max(1, first - context), min(len(lines), last + context) + 1))
    out, gap_start = [], None
    width = len(str(len(lines)))
    for number in range(1, len(lines) + 1):
        if number in keep:
            if gap_start is not None:
                out.append(f"[... lines {gap_start}-{number - 1} omitted ...]")
                gap_start = None
            out.append(f"{number:>{width}}| {lines[number - 1]}")
        elif gap_start is None:
            gap_start = number
    if gap_start is not None:
        out.append(f"[... lines {gap_start}-{len(lines)} omitted ...]")
    return "\n".join(out)


def oracle_setting(files: bool, window: int | None = None) -> str:
    """The oracle setting's name in samples files and evaluation reports: ``none``, ``whole`` (SWE-bench's oracle
    setting: the files the gold patch edits, whole) or ``window:N`` (N lines of context around its hunks)."""
    return "none" if not files else "whole" if window is None else f"window:{window}"


def oracle_windows(instance: Instance, contents: dict[str, str], context: int) -> dict[str, str]:
    """``contents`` (whole oracle files) cut to ``context`` lines around the gold patch's hunks, numbered.

    Windows point at the fix location, so they reveal more than whole files: reports name the setting.
    """
    return patch_windows(instance.patch, contents, context)


def patch_windows(patch: str, contents: Mapping[str, str], context: int) -> dict[str, str]:
    """:func:`oracle_windows` by the gold patch's text: files it does not change stay whole."""
    ranges = hunk_lines(patch)
    return {
        path: window_text(text, ranges[path], context) if path in ranges else text
        for path, text in contents.items()
    }
