"""Small text helpers of the viewer's pages: file-safe names for ids, diffs as classified lines, steps with sizes."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from swe_srl.trajectories.schema import Trajectory

FOLD_CHARS = 2000
"""Observations longer than this are folded (a <details> showing their size)."""
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def slug(key: str) -> str:
    """A file name for ``key`` (an instance id): itself when it is safe, else a cleaned form and a short hash."""
    key = str(key)
    if not _UNSAFE.search(key) and key not in ("", ".", "..") and len(key) <= 150:
        return key
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{_UNSAFE.sub('_', key)[:100]}-{digest}"


def size(text: str) -> str:
    """``text``'s size for a folded block: lines and characters."""
    n = len(text)
    chars = f"{n / 1000:.1f}k chars" if n >= 1000 else f"{n} chars"
    return f"{text.count(chr(10)) + 1} lines, {chars}"


def diff_lines(patch: str) -> list[tuple[str, str]]:
    """A unified diff as (css class, line) pairs: ``file``, ``hunk``, ``add``, ``del`` or ``ctx``."""
    out = []
    for line in patch.splitlines():
        if line.startswith(("diff --git", "+++ ", "--- ", "index ", "new file", "deleted file")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        out.append((kind, line))
    return out


def steps_of(
    trajectory: Trajectory | None, rewards: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """A trajectory's steps for a page: thought, action, observation (folded past :data:`FOLD_CHARS`, with its
    size), exit code, and the step's replay row (its rewards) when ``rewards`` has one."""
    if trajectory is None:
        return []
    by_step = {int(r.get("step", -1)): r for r in rewards or []}
    return [
        {
            "number": k,
            "thought": s.thought,
            "action": s.action,
            "observation": s.observation,
            "fold": len(s.observation or "") > FOLD_CHARS,
            "size": size(s.observation or ""),
            "exit_code": s.exit_code,
            "replay": by_step.get(k),
        }
        for k, s in enumerate(trajectory.steps)
    ]
