"""SEARCH/REPLACE answers read as SWE-RL's Agentless-mini reads them (the default ``--edit-rules agentless`` of the
one-generation protocols); our own implementation of its rules, each named after the SWE-RL function it follows
(``src/swerl/agentless_mini/``; docs/paper.md has the table):

- the ``<solution>`` part: after the first ``<solution>``, before the next ``</solution>``; the whole output when
  there is none (``utils/api.py: parse_thinking_output``);
- only fences opened as exactly ```` ```python ```` are read (``utils/data.py: extract_python_blocks``);
- the file of an edit is the text before ``<<<<<<< SEARCH`` with leading ``#`` and spaces stripped; an edit that
  names none goes to the previous edit's file of the same fence, and is skipped when there is none; identical edits
  of one file count once (``utils/data.py: split_edit_multifile_commands``);
- the divider is exactly a line ``=======``; a block that does not split into two parts is skipped; SEARCH is a
  substring of the file; every block is checked against the original file, then they are applied in order, each
  replacing every occurrence (``utils/data.py: parse_diff_edit_commands``);
- the files edited are those the ``<solution>`` part edits and does not leave empty; their edits come from every
  python fence of the whole output, thinking included (``repair.py: process_loc`` then ``post_process_repair``); a
  file the edits leave empty is dropped (``repair.py: _post_process_multifile_repair``, in both passes);
- no patch when an edited file does not parse or is blank, or when only blank lines change
  (``repair.py: post_process_raw_output`` with ``utils/data.py: check_syntax``,
  ``check_code_differ_by_just_empty_lines``).

Pure functions. The files an answer may edit are those given: every localized file, shown in the prompt or left
out by its input budget (``repair.py: process_loc`` post-processes against ``_get_file_contents(all_found_files[idx])``);
edits of any other file are ignored.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping

from swe_srl.core.search_replace import REPLACE, SEARCH, SOLUTION_CLOSE, SOLUTION_OPEN, Applied

_PYTHON_FENCE = re.compile(r"```python\n(.*?)\n```", re.DOTALL)
_DIVIDER = "\n=======\n"


def solution_part(output: str) -> str:
    """The text after the first ``<solution>`` and before the next ``</solution>`` (all of it when absent)."""
    return output.split(SOLUTION_OPEN, 1)[-1].split(SOLUTION_CLOSE, 1)[0].strip()


def python_blocks(text: str) -> list[str]:
    """The bodies of the ```` ```python ```` fences of ``text`` (other fences are not read)."""
    return _PYTHON_FENCE.findall(text)


def file_commands(blocks: list[str]) -> dict[str, list[str]]:
    """file → its edits (``SEARCH…REPLACE`` text, duplicates once), in the order the blocks give them."""
    by_file: dict[str, list[str]] = {}
    for block in blocks:
        name = None  # each fence starts without a file
        for part in block.split(REPLACE)[:-1]:
            pieces = part.strip().split(SEARCH)
            if len(pieces) > 1 and (named := pieces[0].lstrip("#").strip()):
                name = named
            if len(pieces) != 2 or name is None:
                continue
            command = SEARCH + pieces[1] + "\n" + REPLACE
            commands = by_file.setdefault(name, [])
            if command not in commands:
                commands.append(command)
    return by_file


def split_command(command: str) -> tuple[str, str] | None:
    """(SEARCH text, REPLACE text) of one edit; None unless the divider splits it into exactly two parts."""
    parts = "\n".join(command.splitlines()[1:-1]).split(_DIVIDER)
    return (parts[0], parts[1]) if len(parts) == 2 else None


EMPTY_SEARCH_LIMIT = 1_000_000
"""An empty SEARCH puts its REPLACE before every character of the file and after the last (``str.replace``);
past this many characters of REPLACE so written, the file is not built (it could not parse)."""


def empty_search_fits(content: str, replace: str) -> bool:
    """Whether an empty SEARCH with ``replace`` on ``content`` is built (see :data:`EMPTY_SEARCH_LIMIT`)."""
    return (len(content) + 1) * len(replace) <= EMPTY_SEARCH_LIMIT


def apply_commands(commands: list[str], content: str) -> tuple[str | None, list[str]]:
    """``content`` after the edits that apply to the original, in order, each replacing every occurrence;
    notes on the edits skipped. An empty SEARCH is applied as the rule applies it (on an empty file: the file
    becomes its REPLACE); None when that would write more than :data:`EMPTY_SEARCH_LIMIT` characters."""
    usable, notes = [], []
    for command in commands:
        pair = split_command(command)
        if pair is None:
            notes.append("its divider does not split it into SEARCH and REPLACE (a line exactly =======)")
        elif pair[0] not in content:
            notes.append("its SEARCH text is not in the file")
        else:
            usable.append(pair)
    for search, replace in usable:
        if not search and not empty_search_fits(content, replace):
            return None, [*notes, "an empty SEARCH puts the REPLACE between every two characters"]
        content = content.replace(search, replace)
    return content, notes


def post_process(output: str, contents: Mapping[str, str]) -> Applied:
    """The new contents of the files ``output`` edits among ``contents`` (path → text of the localized files, shown or not), as
    Agentless-mini computes them; ``problem`` says why there is no patch."""
    applied = Applied()
    named = file_commands(python_blocks(solution_part(output)))
    for path in named:
        if path not in contents:
            applied.notes.append(f"dropped the edits of {path!r}: not one of the localized files")
    files = [path for path in named if path in contents]
    for path in [p for p in files if apply_commands(named[p], contents[p])[0] == ""]:
        applied.notes.append(f"dropped {path}: the edits of the <solution> part leave it empty")
        files.remove(path)  # repair.py: process_loc keeps only the files its first pass edits
    commands = file_commands(python_blocks(output))
    new: dict[str, str] = {}
    for path in (p for p in commands if p in files):
        text, notes = apply_commands(commands[path], contents[path])
        applied.notes += [f"skipped an edit of {path}: {note}" for note in notes]
        if text is None:
            applied.problem = f"{path} no longer parses as Python after the edits (an empty SEARCH)"
            return applied
        if text == "":
            applied.notes.append(f"dropped {path}: the edits leave it empty")
        else:
            new[path] = text
    applied.new = {path: text for path, text in new.items() if text != contents[path]}
    applied.problem = _blocking(new, contents, named)
    return applied


def _blocking(
    new: Mapping[str, str], contents: Mapping[str, str], named: Mapping[str, list[str]]
) -> str | None:
    if not named:
        return "no ```python fence with a complete SEARCH/REPLACE edit naming its file in the answer"
    if not new:
        return "no edit of a localized file"
    for path, text in new.items():
        if not text.strip():
            return f"{path} is blank after the edits"
        try:
            ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            return f"{path} no longer parses as Python after the edits (line {getattr(exc, 'lineno', '?')})"
    before = "".join(_squeeze(contents[path]) for path in new)
    if "".join(_squeeze(text) for text in new.values()) == before:
        return (
            "the edits change blank lines only" if new != {p: contents[p] for p in new} else "no edit applied"
        )
    return None


def _squeeze(text: str) -> str:
    """``text`` without its blank lines (lines as ``str.splitlines`` cuts them, as the rule does)."""
    return "\n".join(line for line in text.splitlines() if line.strip())
