"""Unified diffs, parsed in one place: per-file sections with their paths, kind and hunks (on ``unidiff``).

Every diff the project handles (episode patches, expert-state snapshots, gold and test patches, model patches at
grading) goes through :func:`file_diffs`. A patch is cut into per-file sections at ``diff --git`` headers (or, in a
plain ``diff -u`` without them, at ``---``/``+++`` header pairs); each section keeps its raw text byte for byte, so
:func:`drop_sections` returns the rest of a patch unchanged. Each section is parsed by ``unidiff.PatchSet``; one
that unidiff rejects (a malformed hunk; a binary or mode-only section an older unidiff refuses) takes its paths
and kind from its git header lines instead, so no section is ever lost.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError
from unidiff.patch import Hunk, PatchedFile

JUNK = re.compile(r"(^|/)(__pycache__/|[^/]*\.egg-info/|build/)|\.py[co]$")
"""Build artefacts an episode leaves behind; never part of a graded patch."""
DEV_NULL = "/dev/null"
_GIT_SECTION = re.compile(r"(?=^diff --git )", re.MULTILINE)
_PLAIN_SECTION = re.compile(r"(?=^--- [^\n]*\n\+\+\+ )", re.MULTILINE)
_GIT_HEADER = re.compile(r'^diff --git ("?a/.+?"?) ("?b/.+?"?)\r?$', re.MULTILINE)
_BINARY = re.compile(r"^(Binary files .* differ|GIT binary patch)\r?$", re.MULTILINE)


@dataclass(frozen=True)
class FileDiff:
    """One file's section of a patch: ``text`` (raw, header included), its paths (``a/``/``b/`` stripped,
    unquoted) and kind; ``hunks`` are unidiff's. ``parsed`` is False when unidiff rejected the section: then
    ``hunks`` is empty and the rest comes from the git header lines."""

    text: str
    source: str | None
    """Path before the change; None when the file is added."""
    target: str | None
    """Path after the change; None when the file is removed."""
    added: bool = False
    removed: bool = False
    binary: bool = False
    hunks: tuple[Hunk, ...] = ()
    parsed: bool = True

    @property
    def path(self) -> str:
        """The path after the change (the old path of a removed file)."""
        return self.target or self.source or ""

    @property
    def paths(self) -> tuple[str, ...]:
        """Both sides, once each (a rename has two)."""
        return tuple(dict.fromkeys(p for p in (self.source, self.target) if p))

    @property
    def renamed(self) -> bool:
        return bool(self.source and self.target and self.source != self.target)


def _unquote(path: str) -> str:
    """A path as git writes it, without its C-style quotes (``"t\\303\\251st.py"`` → ``tést.py``)."""
    if len(path) > 1 and path[0] == path[-1] == '"':
        return codecs.escape_decode(path[1:-1].encode("utf-8"))[0].decode("utf-8", errors="replace")
    return path


def _clean(path: str | None) -> str | None:
    """A diff header path unquoted and without its ``a/``/``b/`` prefix; None for ``/dev/null`` (or no path)."""
    if not path or path == DEV_NULL:
        return None
    return _unquote(path).removeprefix("a/").removeprefix("b/")


def _unidiff(section: str) -> PatchedFile | None:
    """unidiff's parse of one section; None when it rejects it or does not see exactly one file."""
    try:
        files = PatchSet(section)
    except (UnidiffParseError, ValueError, IndexError):
        return None
    return files[0] if len(files) == 1 else None


def _from_headers(section: str) -> FileDiff:
    """A section unidiff rejected: paths from its ``rename``/``---``/``+++``/``diff --git`` lines, kind from git's."""
    lines = [line.rstrip("\r") for line in section.split("\n")]

    def field(prefix: str) -> str | None:
        return next((x[len(prefix) :].split("\t")[0] for x in lines if x.startswith(prefix)), None)

    header = _GIT_HEADER.match(section)
    renamed_from, renamed_to = field("rename from "), field("rename to ")
    source = (_unquote(renamed_from) if renamed_from else _clean(field("--- "))) or (
        _clean(header.group(1)) if header else None
    )
    target = (_unquote(renamed_to) if renamed_to else _clean(field("+++ "))) or (
        _clean(header.group(2)) if header else None
    )
    added = any(x.startswith("new file mode ") for x in lines) or field("--- ") == DEV_NULL
    removed = any(x.startswith("deleted file mode ") for x in lines) or field("+++ ") == DEV_NULL
    return FileDiff(
        section,
        None if added else source,
        None if removed else target,
        added=added,
        removed=removed,
        binary=bool(_BINARY.search(section)),
        parsed=False,
    )


def _file_diff(section: str) -> FileDiff:
    patched = _unidiff(section)
    if patched is None:
        return _from_headers(section)
    return FileDiff(
        section,
        _clean(patched.source_file),
        _clean(patched.target_file),
        added=patched.is_added_file,
        removed=patched.is_removed_file,
        binary=patched.is_binary_file,
        hunks=tuple(patched),
    )


def _plain_sections(text: str) -> list[str]:
    """Cut a plain ``diff -u`` at its ``---``/``+++`` pairs; a cut inside a hunk (a removed ``-- x`` line followed
    by an added ``++ y``) leaves a piece unidiff rejects, which is joined with the next until they parse."""
    pieces = [p for p in _PLAIN_SECTION.split(text) if p]
    out, i = [], 0
    while i < len(pieces):
        end = i + 1
        if _unidiff(pieces[i]) is None:
            end = next((k for k in range(i + 2, len(pieces) + 1) if _unidiff("".join(pieces[i:k]))), end)
        out.append("".join(pieces[i:end]))
        i = end
    return out


def _split(patch: str) -> tuple[str, list[str]]:
    """(text before the first file section, the raw file sections)."""
    chunks = [c for c in _GIT_SECTION.split(patch) if c]
    lead = chunks.pop(0) if chunks and not chunks[0].startswith("diff --git ") else ""
    plain = None if chunks else _PLAIN_SECTION.search(lead)
    if plain:
        lead, chunks = lead[: plain.start()], _plain_sections(lead[plain.start() :])
    return lead, chunks


@lru_cache(maxsize=128)
def _parse(patch: str) -> tuple[str, tuple[FileDiff, ...]]:
    lead, sections = _split(patch)
    return lead, tuple(_file_diff(s) for s in sections)


def file_diffs(patch: str) -> tuple[FileDiff, ...]:
    """The per-file sections of ``patch``, in order (text before the first section is not one)."""
    return _parse(patch)[1]


def patch_paths(patch: str) -> set[str]:
    """Paths a unified diff touches (both sides of renames)."""
    return {path for f in file_diffs(patch) for path in f.paths}


def drop_sections(patch: str, drop: Callable[[str], bool]) -> tuple[str, list[str]]:
    """``patch`` without the sections where ``drop(path)`` holds for either side; and the (new-side) paths dropped."""
    lead, files = _parse(patch)
    kept, dropped = [lead], []
    for f in files:
        if any(drop(p) for p in f.paths):
            dropped.append(f.path)
        else:
            kept.append(f.text)
    return "".join(kept), dropped


def clean_patch(diff: str, exclude: set[str] = frozenset()) -> str:
    """Drop the file sections of ``diff`` that touch ``exclude`` (test files) or build junk."""
    return drop_sections(diff, lambda path: path in exclude or bool(JUNK.search(path)))[0]
