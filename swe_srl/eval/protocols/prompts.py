"""Prompts of the one-generation protocols: repair (SEARCH/REPLACE edits of whole shown files) and file-level
localization (paths from the repository's Python files, shown as an indented tree as Agentless shows them). Both
hold the problem statement exactly as the dataset gives it; only the repair prompt describes the edit format. The
wording is ours; ``--prompt-template KIND=FILE`` puts a user's text in its place (:func:`load_template`)."""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from swe_srl.core.agentless_edits import solution_part
from swe_srl.core.search_replace import DIVIDER, REPLACE, SEARCH
from swe_srl.errors import ConfigError

Messages = list[dict[str, str]]

LOCALIZATION_FILES = 5
"""How many paths a localization answer may name (the greedy setting of Agentless-mini)."""
FIELDS = {
    "repair": ("problem_statement", "content", "files"),
    "localization": ("problem_statement", "structure", "listing", "n"),
}
"""The named fields a ``--prompt-template`` of each kind may use (``{name}``; literal braces doubled)."""
_FIELD = re.compile(r"(?<!\{)\{([^{}!:]*)[^{}]*\}(?!\})")
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
{structure}

Answer with at most {n} file paths from this list, the most important first, one path per line, inside one
fenced block:

```
package/module.py
package/other_module.py
```"""


def file_block(path: str, text: str) -> str:
    """One file as the repair prompt shows it (the template field ``files`` joins them)."""
    return FILE.format(path=path, content=text.rstrip("\n"))


def repair_messages(
    problem: str, files: Mapping[str, str] | Sequence[tuple[str, str]], template: str | None = None
) -> Messages:
    """The repair prompt: the issue and the whole content of ``files`` (path → text, or (path, text) pairs in
    the order shown: a path localized twice is shown twice, as SWE-RL shows it)."""
    pairs = list(files.items()) if isinstance(files, Mapping) else list(files)
    shown = "\n\n".join(file_block(path, text) for path, text in pairs)
    if template is not None:
        content = "\n\n".join(f"### {path}\n{text}" for path, text in pairs)
        fields = {"problem_statement": problem, "content": content, "files": shown}
        return [{"role": "user", "content": template.format(**fields).strip()}]
    content = REPAIR.format(problem=problem, files=shown, search=SEARCH, divider=DIVIDER, replace=REPLACE)
    return [{"role": "user", "content": content}]


def tree(listing: list[str], indent: int = 4, rng: random.Random | None = None) -> str:
    """``listing`` as an indented tree, a folder's name above its entries (Agentless's
    ``show_project_structure``: a name with a dot that is not a ``.py`` name is left out, with its entries); sorted,
    or in an order shuffled by ``rng`` at each level (its ``randomize``)."""
    root: dict = {}
    for path in listing:
        node = root
        for part in path.split("/"):
            node = node.setdefault(part, {})
    lines: list[str] = []

    def walk(node: dict, depth: int) -> None:
        names = sorted(node)
        if rng is not None:
            rng.shuffle(names)
        for name in names:
            if "." in name and ".py" not in name:
                continue
            lines.append(" " * (depth * indent) + name)
            walk(node[name], depth + 1)

    walk(root, 0)
    return "\n".join(lines)


def localization_messages(
    problem: str,
    listing: list[str],
    n: int = LOCALIZATION_FILES,
    template: str | None = None,
    rng: random.Random | None = None,
) -> Messages:
    """The localization prompt: the issue and the repository's Python files as an indented tree. With ``rng`` (one
    of several samples), randomized as SWE-RL's ``localize.py: localize_files`` randomizes it: 2 to 5 files asked
    for, 2 or 4 spaces a level, the tree's order shuffled."""
    indent = 4
    if rng is not None:
        n, indent = rng.randint(2, 5), rng.choice([2, 4])
    structure = tree(listing, indent, rng)
    fields = {"problem_statement": problem, "structure": structure, "listing": "\n".join(listing), "n": n}
    if template is not None:
        return [{"role": "user", "content": template.format(**fields).strip()}]
    content = LOCALIZATION.format(task=LOCALIZATION_TASK, problem=problem, structure=fields["structure"], n=n)
    return [{"role": "user", "content": content}]


def is_localization(messages: Messages) -> bool:
    """Whether ``messages`` ask for localization (scripted and served test policies answer both prompts)."""
    return bool(messages) and messages[-1]["content"].startswith(LOCALIZATION_TASK)


def parse_localization(output: str, listing: list[str]) -> tuple[list[str], list[str]]:
    """(the paths of a localization answer that are in ``listing``, in its order; notes on the lines dropped).

    As Agentless-mini reads it (``localize.py: localize_files``, ``utils/data.py: correct_file_paths``): the
    ``<solution>`` part (the whole answer without one), line by line; a line is kept when it is exactly a listed
    path. Every listed path is kept, also beyond the number asked for, and a repeated one as often as it is named
    (the repair prompt then shows it as often, when it fits).
    """
    known, files, notes = set(listing), [], []
    for line in solution_part(output).split("\n"):
        if line in known:
            if line in files:
                notes.append(f"{line} named again: kept again, as SWE-RL keeps it")
            files.append(line)
        elif line.strip() and not line.startswith("```"):
            notes.append(f"dropped {line.strip()!r}: not exactly a Python file of the listing")
    return files, notes


def load_template(spec: str) -> tuple[str, str]:
    """``KIND=FILE`` of ``--prompt-template`` → (kind, template text); one clear error for a bad kind, an
    unreadable file or a field the kind does not have."""
    kind, sep, path = spec.partition("=")
    if not sep or kind not in FIELDS:
        raise ConfigError(
            f"--prompt-template {spec!r}: expected KIND=FILE with KIND one of {', '.join(FIELDS)}"
        )
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--prompt-template {spec!r}: cannot read {path!r}: {exc}") from None
    unknown = sorted({name for name in _FIELD.findall(text) if name not in FIELDS[kind]})
    if unknown:
        raise ConfigError(f"--prompt-template {path}: unknown field(s) {', '.join(unknown)} for {kind}; "
                          f"the fields are {', '.join(FIELDS[kind])} (double literal braces: {{{{ }}}})")  # fmt: skip
    try:
        text.format(**dict.fromkeys(FIELDS[kind], ""))
    except (ValueError, IndexError, KeyError) as exc:
        raise ConfigError(
            f"--prompt-template {path}: not a format string ({exc}); double literal braces"
        ) from None
    return kind, text
