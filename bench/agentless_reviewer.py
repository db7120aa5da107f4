"""The answer shapes a reviewer would try on the repair bench of ``bench/agentless_agreement.py``, beyond its first
kinds, and the same answers through the whole eval path under a tight input budget.

The shapes: several edits of one file in reverse order, a SEARCH that matches twice, two edits of one SEARCH, tab
or trailing-space indentation, an edit of a file that was never localized (beside the fix, or alone), an empty
REPLACE (a deletion), an empty SEARCH (a blank line), a ```` ```diff ```` fence, a unified diff instead of edits, the path above the fence, an
absolute or ``a/`` path, two ``<solution>`` parts, fences indented as in a list, a divider of six ``=``, the whole
file as one SEARCH, every edit in one fence, a ``<solution>`` never closed, an answer cut at the generation budget.

The eval path: ``run_protocol`` (``--protocol oracle-edit``, a scripted policy answering the answer) with an input
budget that leaves a file out of the repair prompt (the 60,000 tokens where the files are larger, else the smallest
file's count: the larger ones are left out; with one file, 1: none fits, the first is shown whole). SWE-RL
post-processes against every localized file whatever the budget, so the protocol's patch must be the patch of the
files SWE-RL edits.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agentless_agreement import THINK, block, solution

from swe_srl.agent.policies import ScriptedPolicy
from swe_srl.benchmark.instances import Instance
from swe_srl.core.search_replace import DIVIDER, SEARCH, Edit, make_patch
from swe_srl.eval.protocols.budget import estimate
from swe_srl.eval.protocols.oneshot import REPAIR_INPUT_TOKENS, run_protocol
from swe_srl.eval.protocols.sources import BaseTree
from swe_srl.eval.settings import EvalSettings


@dataclass(frozen=True)
class Files:
    """What a shape may need besides the gold edits: the oracle files, a file of the repository never localized
    (from the first oracle file's folder when it has one) and the gold patch."""

    contents: dict[str, str]
    other: tuple[str, str]
    patch: str


def files_of(tree: BaseTree, contents: dict[str, str], patch: str) -> Files:
    first = next(iter(contents))
    folder = first.rsplit("/", 1)[0] if "/" in first else ""
    listing = [p for p in tree.listing() if p not in contents]
    near = [p for p in listing if p.startswith(folder + "/")] or listing
    for path in near:
        text = tree.contents([path]).get(path, "")
        if len([line for line in text.splitlines() if line.strip()]) >= 3:
            return Files(contents, (path, text), patch)
    return Files(contents, ("setup.py", "import os\nimport sys\n\nsetup()\n"), patch)


def _repeated_line(text: str) -> str | None:
    """A line (not blank, not a bare bracket) that occurs at least twice in ``text``."""
    seen: set[str] = set()
    for line in text.split("\n"):
        if len(line.strip()) >= 4 and not line.rstrip().endswith("\\"):
            if line in seen:
                return line
            seen.add(line)
    return None


def twice(edits: list[Edit], files: Files) -> str:
    """The fix and an edit whose one-line SEARCH occurs twice in the file (a comment added to it)."""
    path = edits[0].path
    line = _repeated_line(files.contents[path])
    extra = [Edit(path, (line,), (line + "  # checked",))] if line else []
    return THINK + solution([*edits, *extra])


def same_search(edits: list[Edit], files: Files) -> str:
    """The fix, then a second edit of its first SEARCH with another REPLACE."""
    e = edits[0]
    return THINK + solution([*edits, Edit(e.path, e.search, ("# another try", *e.search))])


def respaced(edits: list[Edit], indent: Callable[[str], str]) -> list[Edit]:
    return [Edit(e.path, tuple(map(indent, e.search)), tuple(map(indent, e.replace))) for e in edits]


def tabs(line: str) -> str:
    stripped = line.lstrip(" ")
    return "\t" * ((len(line) - len(stripped)) // 4) + " " * ((len(line) - len(stripped)) % 4) + stripped


def unlocalized(edits: list[Edit], files: Files, alone: bool = False) -> str:
    """An edit of a real file of the repository that was never localized (a comment after its first line)."""
    path, text = files.other
    first = next(line for line in text.split("\n") if line.strip())
    other = Edit(path, (first,), (first, "# touched"))
    return THINK + solution([other] if alone else [*edits, other])


def deletion(edits: list[Edit], files: Files, alone: bool = False) -> str:
    """An edit with an empty REPLACE deleting the first oracle file's last line that has text."""
    path = edits[0].path
    last = [line for line in files.contents[path].split("\n") if line.strip()][-1]
    gone = Edit(path, (last,), ())
    return THINK + solution([gone] if alone else [*edits, gone])


def unified(edits: list[Edit], files: Files) -> str:
    return THINK + "<solution>\n```diff\n" + files.patch.rstrip("\n") + "\n```\n</solution>"


def path_above(edits: list[Edit], files: Files) -> str:
    """``### path`` on the line before each fence instead of inside it."""
    parts = [f"### {e.path}\n" + block(e, named=False) for e in edits]
    return THINK + "<solution>\n" + "\n\n".join(parts) + "\n</solution>"


def two_solutions(edits: list[Edit], files: Files) -> str:
    """A first ``<solution>`` with the fix, a second one with a comment added to its first edit."""
    e = edits[0]
    second = [Edit(e.path, e.search, ("# second thoughts", *e.replace))]
    return THINK + solution(edits) + "\nOn second thought:\n" + solution(second)


def indented_fences(edits: list[Edit], files: Files) -> str:
    """Each fence inside a numbered list: every line of it indented by three spaces."""
    parts = [f"{k + 1}. Change {e.path}:\n" + re.sub("(?m)^", "   ", block(e)) for k, e in enumerate(edits)]
    return THINK + "<solution>\n" + "\n\n".join(parts) + "\n</solution>"


def whole_file(edits: list[Edit], files: Files) -> str:
    """Each edited file as one edit: SEARCH its whole text, REPLACE the text with the fix applied."""
    out = []
    for path in dict.fromkeys(e.path for e in edits):
        text = files.contents[path]
        for e in (x for x in edits if x.path == path):
            text = text.replace("\n".join(e.search), "\n".join(e.replace), 1)
        old, new = files.contents[path].rstrip("\n"), text.rstrip("\n")
        out.append(Edit(path, tuple(old.split("\n")), tuple(new.split("\n"))))
    return THINK + solution(out)


def one_fence_named(edits: list[Edit], files: Files) -> str:
    """Every edit of every file in one fence, each naming its file."""
    bodies = [block(e)[len("```python\n") : -len("\n```")] for e in edits]
    return THINK + "<solution>\n```python\n" + "\n".join(bodies) + "\n```\n</solution>"


def cut(edits: list[Edit], files: Files) -> str:
    """The answer cut at 70% of its length (the generation budget ran out mid-edit)."""
    answer = THINK + solution(edits)
    return answer[: len(answer) * 7 // 10]


SHAPES: dict[str, Callable[[list[Edit], Files], str]] = {
    "edits of a file in reverse order": lambda e, f: THINK + solution(e[::-1]),
    "a SEARCH that matches twice": twice,
    "two edits of one SEARCH": same_search,
    "tabs for indentation": lambda e, f: THINK + solution(respaced(e, tabs)),
    "trailing spaces on SEARCH lines": lambda e, f: (
        THINK + solution([Edit(x.path, tuple(s + "  " if s else s for s in x.search), x.replace) for x in e])
    ),
    "fix + an unlocalized file": unlocalized,
    "only an unlocalized file": lambda e, f: unlocalized(e, f, alone=True),
    "fix + an empty REPLACE": deletion,
    "only an empty REPLACE": lambda e, f: deletion(e, f, alone=True),
    "fix + an empty SEARCH (a blank line)": lambda e, f: (
        THINK + solution([*e, Edit(e[0].path, ("",), ("import os",))])
    ),
    "```diff fence": lambda e, f: THINK + solution(e, fence="diff"),
    "a unified diff instead": unified,
    "path above the fence": path_above,
    "### /testbed/path": lambda e, f: THINK + solution(e, header="### /testbed/{path}"),
    "### a/path": lambda e, f: THINK + solution(e, header="### a/{path}"),
    "two <solution> parts": two_solutions,
    "fences indented in a list": indented_fences,
    "divider of six =": lambda e, f: THINK + solution(e, divider=DIVIDER[:-1]),
    "SEARCH marker with eight <": lambda e, f: THINK + solution(e).replace(SEARCH, "<" + SEARCH),
    "the whole file as SEARCH": whole_file,
    "every edit in one fence, each named": one_fence_named,
    "<solution> never closed": lambda e, f: THINK + solution(e)[: -len("\n</solution>")],
    "cut at the generation budget": cut,
}


def tight_budget(contents: dict[str, str]) -> int:
    """An input budget that leaves a file out of the repair prompt (see the module's docstring)."""
    counts = [estimate(f"### {path}\n{text}") for path, text in contents.items()]
    if sum(counts) > REPAIR_INPUT_TOKENS:
        return REPAIR_INPUT_TOKENS
    return min(counts) if len(counts) > 1 else 1


def eval_patch(instance: Instance, answer: str, budget: int, repos_dir: Path) -> str:
    """The patch ``swe-srl eval --protocol oracle-edit`` writes for ``answer`` under ``budget``."""
    settings = EvalSettings(
        "empty", protocol="oracle-edit", repos_dir=str(repos_dir), repair_input_tokens=budget
    )
    return run_protocol(instance, settings, ScriptedPolicy([answer]))["patch"]


def same_through_eval(
    instance: Instance, answer: str, contents: dict[str, str], theirs: dict[str, str], repos_dir: Path
) -> bool:
    """Whether the eval path's patch under a tight budget is the patch of the files SWE-RL edits."""
    return eval_patch(instance, answer, tight_budget(contents), repos_dir) == make_patch(theirs, contents)
