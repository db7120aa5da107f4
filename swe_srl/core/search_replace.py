"""SEARCH/REPLACE edits (the edit format of SWE-RL's Agentless-mini) by our strict rules (``--edit-rules strict``;
the default reading is Agentless-mini's own, :mod:`swe_srl.core.agentless_edits`): parse a model's answer, apply
the edits to the base files; turn new file contents into a unified diff (both rules); write edits as an answer.

An answer may open with ``<think>…</think>``; its edits sit in a ``<solution>`` block (without one, the text after
the thinking is read). Each edit lives in a fenced block (```python, ```py or a bare fence)::

    ### path/to/file.py
    <<<<<<< SEARCH
    old lines
    =======
    new lines
    >>>>>>> REPLACE

A fence may hold several edits; the ``### path`` line carries over to the next edit of the same fence. SEARCH
matches whole lines. Pure functions only: the caller supplies file contents and the path rules.
"""

from __future__ import annotations

import ast
import difflib
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from swe_srl.core.actions import THINK_CLOSE, THINK_OPEN

SEARCH, DIVIDER, REPLACE = "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"
SOLUTION_OPEN, SOLUTION_CLOSE = "<solution>", "</solution>"
_FENCE = re.compile(r"^```[ \t]*(?:python|py)?[ \t]*$")


@dataclass(frozen=True)
class Edit:
    """One SEARCH/REPLACE edit: ``search`` and ``replace`` are whole lines (without their newlines)."""

    path: str
    search: tuple[str, ...]
    replace: tuple[str, ...]


@dataclass
class Parsed:
    """The edits of an answer, notes on blocks that were skipped, and why nothing was read (``problem``)."""

    edits: list[Edit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problem: str | None = None


@dataclass
class Applied:
    """New contents of the files the edits changed, notes on edits skipped or dropped, and a blocking ``problem``
    (then ``patch`` is empty)."""

    new: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    problem: str | None = None


def answer_text(output: str) -> tuple[str, str | None]:
    """The answer part of ``output``: inside ``<solution>`` (to the end when it is never closed), else the text
    after ``</think>``. A ``<think>`` that is never closed leaves no answer: ``("", why)``."""
    text = output.strip()
    if text.startswith(THINK_OPEN):
        close = text.find(THINK_CLOSE)
        if close < 0:
            return "", "the <think> block is never closed (no answer after it)"
        text = text[close + len(THINK_CLOSE) :]
    start = text.find(SOLUTION_OPEN)
    if start >= 0:
        text = text[start + len(SOLUTION_OPEN) :]
        end = text.find(SOLUTION_CLOSE)
        text = text[:end] if end >= 0 else text
    return text, None


def parse_edits(output: str) -> Parsed:
    """The SEARCH/REPLACE edits of a model answer (malformed blocks are skipped with a note)."""
    text, problem = answer_text(output)
    if problem:
        return Parsed(problem=problem)
    parsed, lines = Parsed(), text.split("\n")
    path, k = None, 0
    while k < len(lines):
        line = lines[k]
        if _FENCE.match(line):
            path = None  # each fence names its file
        elif line.startswith("### "):
            path = line[4:].strip() or None
        elif line.strip() == SEARCH:
            end = _block_end(lines, k + 1)
            if end is None:
                parsed.notes.append(
                    f"a SEARCH block of {path or '(no path)'} lacks its {DIVIDER} or {REPLACE} line"
                )
                k += 1
                continue
            (divider, last), first = end, k + 1
            if path is None:
                parsed.notes.append("a SEARCH/REPLACE block names no file (no ### path line in its fence)")
            else:
                parsed.edits.append(Edit(path, tuple(lines[first:divider]), tuple(lines[divider + 1 : last])))
            k = last
        k += 1
    if not parsed.edits:
        parsed.problem = "; ".join(["no complete SEARCH/REPLACE edit", *parsed.notes])
    return parsed


def _block_end(lines: list[str], start: int) -> tuple[int, int] | None:
    """(divider line, replace marker line) of a block whose SEARCH lines start at ``start``."""
    divider = next((k for k in range(start, len(lines)) if lines[k].rstrip() == DIVIDER), None)
    if divider is None:
        return None
    end = next((k for k in range(divider + 1, len(lines)) if lines[k].strip() == REPLACE), None)
    stray = next((k for k in range(start, divider) if lines[k].strip() in (SEARCH, REPLACE)), None)
    return None if end is None or stray is not None else (divider, end)


def inside_repo(path: str) -> str | None:
    """``path`` normalized when it stays inside the repository (relative, no ``..`` escape), else None."""
    if not path or path.startswith(("/", "~")) or "\\" in path or re.match(r"^[A-Za-z]:", path):
        return None
    norm = posixpath.normpath(path)
    return None if norm == "." or norm == ".." or norm.startswith("../") else norm


def apply_edits(
    edits: list[Edit],
    contents: Mapping[str, str],
    *,
    is_test: Callable[[str], bool] = lambda path: False,
    creatable: Callable[[str], bool] = lambda path: False,
    exactly_once: bool = False,
) -> Applied:
    """Apply ``edits`` in order to ``contents`` (path → text of the files shown to the model).

    Dropped with a note: paths outside the repository, test files (``is_test``), files not shown (an empty SEARCH
    may create a file when ``creatable(path)``). Skipped with a note: a SEARCH that matches no whole lines, or
    (``exactly_once``) more than once; otherwise every occurrence is replaced. A changed Python file that no
    longer parses, or changes that are only blank lines, leave no patch (``problem``).
    """
    applied = Applied()
    current: dict[str, str | None] = {}
    for edit in edits:
        path = inside_repo(edit.path)
        if path is None:
            applied.notes.append(f"dropped an edit of {edit.path!r}: outside the repository")
        elif is_test(path):
            applied.notes.append(f"dropped an edit of {path}: a test file")
        elif path not in contents and not (not edit.search and creatable(path)):
            applied.notes.append(f"dropped an edit of {path}: not one of the files shown")
        else:
            text = current.get(path, contents.get(path))
            new, note = _apply_one(edit, text, exactly_once)
            if note:
                applied.notes.append(f"skipped an edit of {path}: {note}")
            else:
                current[path] = new
    changed = {p: t for p, t in current.items() if t is not None and t != contents.get(p)}
    applied.new, applied.problem = changed, _blocking(changed, contents)
    return applied


def _apply_one(edit: Edit, text: str | None, exactly_once: bool) -> tuple[str | None, str | None]:
    if text is None or (not edit.search and text == ""):
        return "".join(line + "\n" for line in edit.replace), None
    if not edit.search:
        return None, "empty SEARCH on an existing file"
    lines, search = text.split("\n"), list(edit.search)
    starts = _matches(lines, search)
    if not starts:
        return None, "SEARCH matches no lines of the file"
    if exactly_once and len(starts) > 1:
        return None, f"SEARCH matches {len(starts)} places (exactly one required)"
    for start in reversed(starts):
        lines[start : start + len(search)] = list(edit.replace)
    return "\n".join(lines), None


def _matches(lines: list[str], search: list[str]) -> list[int]:
    """Start indices of the non-overlapping occurrences of ``search`` in ``lines``."""
    starts, k, n = [], 0, len(search)
    while k + n <= len(lines):
        if lines[k : k + n] == search:
            starts.append(k)
            k += n
        else:
            k += 1
    return starts


def _blocking(changed: Mapping[str, str], contents: Mapping[str, str]) -> str | None:
    for path, text in sorted(changed.items()):
        if path.endswith(".py"):
            try:
                ast.parse(text)
            except (SyntaxError, ValueError) as exc:
                return (
                    f"{path} no longer parses as Python after the edits (line {getattr(exc, 'lineno', '?')})"
                )
    if changed and all(_squeeze(t) == _squeeze(contents.get(p) or "") for p, t in changed.items()):
        return "the edits change blank lines only"
    return None


def _squeeze(text: str) -> str:
    return "\n".join(line for line in text.split("\n") if line.strip())


def make_patch(new: Mapping[str, str], old: Mapping[str, str]) -> str:
    """A git-style unified diff from ``old`` (path → base text; a path missing there is a new file) to ``new``."""
    sections = []
    for path in sorted(new):
        before = old.get(path)
        body = difflib.unified_diff(
            _with_ends(before or ""),
            _with_ends(new[path]),
            "/dev/null" if before is None else f"a/{path}",
            f"b/{path}",
            n=3,
        )
        text = "".join(
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in body
        )
        if text:
            mode = "new file mode 100644\n" if before is None else ""
            sections.append(f"diff --git a/{path} b/{path}\n{mode}{text}")
    return "".join(sections)


def _with_ends(text: str) -> list[str]:
    """The lines of ``text`` cut at ``\n`` only, as git cuts them (``str.splitlines`` also cuts at form feeds,
    ``\x1c``-``\x1e``, ``\x85``, ``\u2028``, ``\u2029``: a diff built so is rejected by ``git apply``)."""
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return lines if lines[-1] else lines[:-1]


def format_edits(edits: list[Edit]) -> str:
    """``edits`` as an answer: one ```python fence per edit inside ``<solution>``."""
    fences = [f"```python\n### {e.path}\n{SEARCH}\n{_lines(e.search)}{DIVIDER}\n{_lines(e.replace)}{REPLACE}\n```"
              for e in edits]  # fmt: skip
    return f"{SOLUTION_OPEN}\n" + "\n\n".join(fences) + f"\n{SOLUTION_CLOSE}"


def _lines(lines: tuple[str, ...]) -> str:
    return "".join(line + "\n" for line in lines)
