"""Turn a gold patch into the edit commands a careful engineer would type (``sed -i`` or the editor tool).

Pure functions over text: :func:`plan_edits` cuts each hunk down to the smallest block that is unique in the
file, :func:`edit_command` renders one edit as a bash command line. The scripted expert runs these for real.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from swe_srl.core.patches import file_diffs
from swe_srl.errors import TaskError

WORKDIR = "/testbed"
_DEF_LINE = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+\w+")


@dataclass(frozen=True)
class Edit:
    """One change to one file: replace ``old`` (unique in the file, or empty for a new file) with ``new``."""

    path: str
    old: str
    new: str
    kind: str = "replace"
    """``replace`` (edit an existing file), ``create`` (new file) or ``delete``."""
    line: int = 0
    """1-based line where ``old`` starts in the file before the edit."""
    header: str = ""
    """The hunk's section header (``def merge_with(self, other):``), when git found one."""

    @property
    def one_line(self) -> bool:
        """A single line replaced by a single line with the same surrounding whitespace: a job for ``sed -i``.

        ``sed`` substitutes the stripped text, so the edit must be exactly that substitution (a change in
        indentation or trailing spaces is not).
        """
        old, new = self.old.split("\n"), self.new.split("\n")
        if self.kind != "replace" or len(old) != 1 or len(new) != 1:
            return False
        before, after = old[0].strip(), new[0].strip()
        return bool(before and after) and old[0].replace(before, after, 1) == new[0]


def _hunk_block(lines: list[tuple[str, str]], lo: int, hi: int) -> tuple[str, str]:
    old = [text for kind, text in lines[lo:hi] if kind != "+"]
    new = [text for kind, text in lines[lo:hi] if kind != "-"]
    return "".join(old), "".join(new)


def _trim_newline(old: str, new: str) -> tuple[str, str]:
    if old.endswith("\n") and new.endswith("\n"):
        return old[:-1], new[:-1]
    return old, new


def _smallest_unique(lines: list[tuple[str, str]], content: str) -> tuple[str, str]:
    """Grow the changed region by context lines until its old text occurs exactly once in ``content``.

    Uniqueness is checked on the text the command will really carry: the block without its final newline
    when both sides have one (the usual editor form), else the block as is. A trailing blank context line
    can be what makes a block unique, so the trimmed form is only used when it is unique on its own.
    """
    changed = [i for i, (kind, _) in enumerate(lines) if kind != " "]
    first, last = changed[0], changed[-1] + 1
    for extra in range(len(lines) + 1):
        lo, hi = max(0, first - extra), min(len(lines), last + extra)
        block = _hunk_block(lines, lo, hi)
        for old, new in dict.fromkeys([_trim_newline(*block), block]):
            if old.strip() and content.count(old) == 1:
                return old, new
        if lo == 0 and hi == len(lines):
            break
    raise TaskError(f"hunk old text is not unique in the file even with all context: {block[0][:80]!r}")


def _enclosing(content: str, line: int) -> str:
    """The nearest ``def``/``class`` line at or above 1-based ``line`` (stripped), or ``""``."""
    lines = content.split("\n")[:line]
    for text in reversed(lines):
        if _DEF_LINE.match(text):
            return text.strip()
    return ""


def plan_edits(patch: str, read) -> list[Edit]:
    """Edits reproducing ``patch``; ``read(path) -> str`` gives a file's current text (repo-relative path).

    Hunks are applied in order to an in-memory copy so each edit's ``old`` is unique in the file as it will be
    when the command runs. Raises ``TaskError`` for binary patches or text that cannot be made unique.
    """
    edits: list[Edit] = []
    for patched in file_diffs(patch):
        if patched.binary:
            raise TaskError(f"{patched.path}: binary patches cannot be scripted")
        if not patched.parsed:
            raise TaskError(f"{patched.path}: the patch section does not parse as a unified diff")
        if patched.added:
            text = "".join(line.value for hunk in patched.hunks for line in hunk if line.is_added)
            edits.append(Edit(patched.path, "", text, kind="create"))
            continue
        path = patched.source or patched.path
        if patched.removed:
            edits.append(Edit(path, "", "", kind="delete"))
            continue
        content = read(path)
        for hunk in patched.hunks:
            lines = [(line.line_type, line.value) for line in hunk if line.line_type in " +-"]
            old, new = _smallest_unique(lines, content)
            line = content[: content.index(old)].count("\n") + 1
            header = _enclosing(content, line + old.count("\n") - 1) or hunk.section_header.strip()
            content = content.replace(old, new, 1)
            edits.append(Edit(path, old, new, line=line, header=header))
    return edits


def apply_edits(edits: list[Edit], read) -> dict[str, str | None]:
    """The expected text of every edited file after ``edits`` (``None`` = deleted); used to check commands."""
    files: dict[str, str | None] = {}
    for edit in edits:
        if edit.kind == "create":
            files[edit.path] = edit.new
        elif edit.kind == "delete":
            files[edit.path] = None
        else:
            current = files[edit.path] if edit.path in files else read(edit.path)
            files[edit.path] = current.replace(edit.old, edit.new, 1)
    return files


def _sed_escape(text: str, *, replacement: bool) -> str:
    special = "\\/&" if replacement else "\\/.*[]^$"
    return "".join("\\" + ch if ch in special else ch for ch in text)


def sed_command(edit: Edit, *, with_line: bool) -> str:
    """``sed -i 's/old/new/' path`` for a one-line edit (addressed by line number when ``with_line``)."""
    old, new = edit.old.strip(), edit.new.strip()
    script = f"s/{_sed_escape(old, replacement=False)}/{_sed_escape(new, replacement=True)}/"
    if with_line:
        script = f"{edit.line}{script}"
    return f"sed -i {shlex.quote(script)} {shlex.quote(edit.path)}"


def editor_command(edit: Edit) -> str:
    """The ``str_replace_editor`` call making ``edit`` (absolute path, bash-quoted arguments)."""
    path = shlex.quote(f"{WORKDIR}/{edit.path}")
    if edit.kind == "create":
        return f"str_replace_editor create {path} --file_text {shlex.quote(edit.new)}"
    if edit.kind == "delete":
        return f"rm {shlex.quote(edit.path)}"
    return f"str_replace_editor str_replace {path} --old_str {shlex.quote(edit.old)} --new_str {shlex.quote(edit.new)}"


def edit_command(edit: Edit, style: str, content: str = "") -> str:
    """Render ``edit`` as ``sed`` (one-line edits only) or ``editor``; ``content`` is the file before the edit."""
    if style == "sed" and edit.one_line:
        unique = content.count(edit.old.strip()) == 1 if content else False
        return sed_command(edit, with_line=not unique)
    return editor_command(edit)
