"""Prompts of the one-generation protocols: repair (SEARCH/REPLACE edits of whole shown files) and file-level
localization (paths from the repository's listing). Both hold the problem statement exactly as the dataset gives it;
only the repair prompt describes the edit format."""

from __future__ import annotations

import re
from collections.abc import Mapping

from swe_srl.core.search_replace import DIVIDER, REPLACE, SEARCH, answer_text

Messages = list[dict[str, str]]

LOCALIZATION_FILES = 5
"""How many paths a localization answer may name (the greedy setting of Agentless-mini)."""
_FENCED = re.compile(r"^```[^\n]*\n(.*?)^[ \t]*```", re.DOTALL | re.MULTILINE)
LOCALIZATION_TASK = "Which files of this repository must change to resolve the issue?"

REPAIR = """Resolve the issue below by editing the repository's files.

The issue, as it was reported:
<issue>
{problem}
</issue>

The current content of the files that are likely to need changes:

{files}

How to answer: you may think first inside <think>...</think>. Then write your edits inside <solution>...</solution>.
Each edit is one fenced block of this form:

```python
### path/of/the/file.py
{search}
lines copied exactly from the file, with their indentation
{divider}
the lines that take their place
{replace}
```

- The SEARCH lines must be whole lines of the file, copied character for character, so that they match exactly
  one place; keep them short but unambiguous.
- To insert code, put a neighbouring line in SEARCH and repeat it in the replacement.
- Use one fenced block per edit; several edits may change the same file.
- Do not edit test files."""

FILE = "### {path}\n```\n{content}\n```"

LOCALIZATION = """{task}

The issue, as it was reported:
<issue>
{problem}
</issue>

The Python files of the repository:
{listing}

Answer with at most {n} file paths from this list, the most important first, one path per line, inside one
fenced block:

```
package/module.py
package/other_module.py
```"""


def repair_messages(problem: str, files: Mapping[str, str]) -> Messages:
    """The repair prompt: the issue and the whole content of ``files`` (path → text)."""
    shown = "\n\n".join(FILE.format(path=path, content=text.rstrip("\n")) for path, text in files.items())
    content = REPAIR.format(problem=problem, files=shown, search=SEARCH, divider=DIVIDER, replace=REPLACE)
    return [{"role": "user", "content": content}]


def localization_messages(problem: str, listing: list[str], n: int = LOCALIZATION_FILES) -> Messages:
    """The localization prompt: the issue and the repository's Python files, one path per line."""
    content = LOCALIZATION.format(task=LOCALIZATION_TASK, problem=problem, listing="\n".join(listing), n=n)
    return [{"role": "user", "content": content}]


def is_localization(messages: Messages) -> bool:
    """Whether ``messages`` ask for localization (scripted and served test policies answer both prompts)."""
    return bool(messages) and messages[-1]["content"].startswith(LOCALIZATION_TASK)


def parse_localization(output: str, listing: list[str]) -> tuple[list[str], list[str]]:
    """(the paths of a localization answer that are in ``listing``, in its order; notes on the paths dropped).

    The lines of the answer's first fenced block are read (the whole answer when it has none), after any
    ``<think>`` block; a leading ``./`` or list bullet is ignored. Every listed path is kept, also beyond the
    number the prompt asks for (as Agentless-mini keeps them).
    """
    text, problem = answer_text(output)
    if problem:
        return [], [problem]
    fence = _FENCED.search(text)
    lines = (fence.group(1) if fence else text).split("\n")
    known, files, notes = set(listing), [], []
    for line in lines:
        path = line.strip().lstrip("-*").strip().removeprefix("./")
        if not path or path in files:
            continue
        if path in known:
            files.append(path)
        else:
            notes.append(f"dropped {path!r}: not a Python file of the listing")
    return files, notes
