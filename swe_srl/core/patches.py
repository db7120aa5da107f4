"""Unified git diffs: split into per-file sections, the paths they touch, and dropping sections by path.

Every diff the project handles (episode patches, expert-state snapshots, gold and model patches at grading) goes
through these helpers; per-file sections are cut at ``diff --git`` headers, so binary and mode-only sections that
a hunk parser would reject are kept whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable

JUNK = re.compile(r"(^|/)(__pycache__/|[^/]*\.egg-info/|build/)|\.py[co]$")
"""Build artefacts an episode leaves behind; never part of a graded patch."""
_DIFF_HEADER = re.compile(r"^diff --git a/(\S+) b/(\S+)", re.MULTILINE)


def file_sections(patch: str) -> list[tuple[tuple[str, ...], str]]:
    """``[(paths, section)]``: each ``diff --git`` section with its (a, b) paths; leading text has no paths."""
    out = []
    for section in re.split(r"(?=^diff --git )", patch, flags=re.MULTILINE):
        if section:
            match = _DIFF_HEADER.match(section)
            out.append((match.groups() if match else (), section))
    return out


def patch_paths(patch: str) -> set[str]:
    """Paths a unified git diff touches (both sides of renames)."""
    return {path for paths, _ in file_sections(patch) for path in paths}


def drop_sections(patch: str, drop: Callable[[str], bool]) -> tuple[str, list[str]]:
    """``patch`` without the sections where ``drop(path)`` holds for either side; and the (b-side) paths dropped."""
    kept, dropped = [], []
    for paths, section in file_sections(patch):
        if paths and any(drop(p) for p in paths):
            dropped.append(paths[-1])
        else:
            kept.append(section)
    return "".join(kept), dropped


def clean_patch(diff: str, exclude: set[str] = frozenset()) -> str:
    """Drop the file sections of ``diff`` that touch ``exclude`` (test files) or build junk."""
    return drop_sections(diff, lambda path: path in exclude or bool(JUNK.search(path)))[0]
