"""A unified diff written as SEARCH/REPLACE edits (:mod:`swe_srl.core.search_replace`): the gold patch in the edit
format of the one-generation protocols, for ``--policy gold`` and the tests' served model.

Each hunk's old lines (context and removed) become a SEARCH, widened by neighbouring lines of the file until it
matches exactly one place, also as a substring of the file (Agentless-mini's rule), and ends on a line after the
hunk with text and no trailing space (Agentless-mini strips the end of an edit); hunks whose SEARCH regions meet are
merged into one edit. An added file is an edit with
an empty SEARCH. A removed or binary file has no such form and is reported in ``left_out``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from swe_srl.core.patches import file_diffs
from swe_srl.core.search_replace import Edit


@dataclass
class _Span:
    """Old lines [start, end) of one hunk and the lines that replace them."""

    start: int
    end: int
    new: list[str]


def diff_to_edits(patch: str, contents: Mapping[str, str]) -> tuple[list[Edit], list[str]]:
    """(edits reproducing ``patch`` on ``contents`` (path → base text), paths that cannot be written as edits)."""
    edits: list[Edit] = []
    left_out: list[str] = []
    for diff in file_diffs(patch):
        if diff.added and diff.hunks:
            edits.append(Edit(diff.path, (), tuple(line for h in diff.hunks for line in _side(h, new=True))))
        elif diff.removed or diff.binary or not diff.hunks or diff.renamed or diff.source not in contents:
            left_out.append(diff.path)
        else:
            lines = contents[diff.source].split("\n")
            spans = [_span(h, lines) for h in diff.hunks]
            if None in spans:
                left_out.append(diff.path)
                continue
            spans.sort(key=lambda span: span.start)
            edits += [_edit(diff.source, lines, group) for group in _windows(lines, spans)]
    return edits, left_out


def _side(hunk, *, new: bool) -> list[str]:
    return [
        line.value.removesuffix("\n")
        for line in hunk
        if line.is_context or (line.is_added if new else line.is_removed)
    ]


def _span(hunk, lines: list[str]) -> _Span | None:
    """Where the hunk's old lines are in the file: the place nearest its line number (``git apply`` also finds a
    hunk whose numbers are off); None when they are nowhere."""
    old = _side(hunk, new=False)
    at = hunk.source_start - 1 if hunk.source_length else hunk.source_start
    if old:
        places = [k for k in range(len(lines) - len(old) + 1) if lines[k : k + len(old)] == old]
        if not places:
            return None
        at = min(places, key=lambda k: abs(k - at))
    return _Span(at, at + len(old), _side(hunk, new=True))


def _count(lines: list[str], start: int, end: int) -> int:
    """How often lines [start, end) occur in the file as text, overlaps counted (0, 1 or 2: more is 2)."""
    if end == start:
        return 0
    text, search = "\n".join(lines), "\n".join(lines[start:end])
    first = text.find(search)
    return 0 if first < 0 else 1 if text.find(search, first + 1) < 0 else 2


def _settled(lines: list[str], start: int, end: int, hunk_end: int, limit: int) -> bool:
    """The window matches once and, unless it reaches ``limit``, ends on a clean line after the hunks."""
    if end - start == 0 or _count(lines, start, end) != 1:
        return False
    last = lines[end - 1]
    return end >= limit or (end > hunk_end and last.strip() != "" and last == last.rstrip())


def _windows(lines: list[str], spans: list[_Span]) -> list[tuple[int, int, list[_Span]]]:
    """Groups of hunks with the old-line window each group's SEARCH covers (unique in the file)."""
    groups = [(s.start, s.end, [s]) for s in spans]
    while True:
        widened = [(*_unique(lines, a, b, max(s.end for s in g)), g) for a, b, g in groups]
        merged: list[tuple[int, int, list[_Span]]] = []
        for a, b, g in widened:
            if merged and a < merged[-1][1]:
                pa, pb, pg = merged.pop()
                merged.append((min(pa, a), max(pb, b), pg + g))
            else:
                merged.append((a, b, g))
        if len(merged) == len(groups):
            return merged
        groups = merged


def _unique(lines: list[str], start: int, end: int, hunk_end: int) -> tuple[int, int]:
    """[start, end) widened, alternately below and above, until :func:`_settled`; never onto the empty line after
    the file's last newline (an edit's end is stripped: the newline would be lost)."""
    below, limit = True, max(end, len(lines) - (lines[-1] == ""))
    while not _settled(lines, start, end, hunk_end, limit) and (start > 0 or end < limit):
        if (below and end < limit) or start == 0:
            end += 1
        else:
            start -= 1
        below = not below
    return start, end


def _edit(path: str, lines: list[str], group: tuple[int, int, list[_Span]]) -> Edit:
    start, end, spans = group
    new, at = [], start
    for span in spans:
        new += lines[at : span.start] + span.new
        at = span.end
    new += lines[at:end]
    return Edit(path, tuple(lines[start:end]), tuple(new))
