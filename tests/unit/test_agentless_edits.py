"""Agentless-mini's post-processing (core/agentless_edits.py), one table per rule; each case is an answer built
here on small files, with the files it must give (``{}``: no patch) and, for no patch, words of its reason."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from swe_srl.core.agentless_edits import post_process
from swe_srl.core.search_replace import make_patch

BASE = {
    "pkg/core.py": "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n",
    "pkg/util.py": "X = 1\nY = 2\n",
}
ADD_FIXED = BASE["pkg/core.py"].replace("return a - b", "return a + b", 1)
BOTH_FIXED = BASE["pkg/core.py"].replace("return a - b", "return a + b")


def edit(search: str, replace: str, path: str | None = "pkg/core.py", *, header: str = "### {}") -> str:
    head = header.format(path) + "\n" if path else ""
    return f"{head}<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE"


def fence(*edits: str, lang: str = "python") -> str:
    return f"```{lang}\n" + "\n".join(edits) + "\n```"


def answer(*fences: str, think: str = "<think>\nhm\n</think>\n") -> str:
    return think + "<solution>\n" + "\n".join(fences) + "\n</solution>"


FIX = edit("def add(a, b):\n    return a - b", "def add(a, b):\n    return a + b")
UTIL = edit("X = 1", "X = 3", "pkg/util.py")
UTIL_FIXED = {"pkg/util.py": "X = 3\nY = 2\n"}


def check(output: str, expected: dict[str, str], reason: str = "") -> None:
    applied = post_process(output, BASE)
    assert (applied.new if applied.problem is None else {}) == expected, applied.notes
    assert reason in (applied.problem or "")


READ = {  # what is read: only ```python fences
    "python fence": (answer(fence(FIX)), {"pkg/core.py": ADD_FIXED}, ""),
    "bare fence": (answer(fence(FIX, lang="")), {}, "no ```python fence"),
    "py fence": (answer(fence(FIX, lang="py")), {}, "no ```python fence"),
    "prose only": ("Change add() to use +.", {}, "no ```python fence"),
    "unclosed fence": (answer("```python\n" + FIX), {}, "no ```python fence"),
}
NAMES = {  # the file name: the text before SEARCH, leading # and spaces stripped; it carries over in a fence
    "#### path": (answer(fence(edit("X = 1", "X = 3", "pkg/util.py", header="#### {}"))), UTIL_FIXED, ""),
    "###path": (answer(fence(edit("X = 1", "X = 3", "pkg/util.py", header="###{}"))), UTIL_FIXED, ""),
    "bare path": (answer(fence(edit("X = 1", "X = 3", "pkg/util.py", header="{}"))), UTIL_FIXED, ""),
    "prose before the path": (
        answer(fence(edit("X = 1", "X = 3", "pkg/util.py", header="See:\n# {}"))),
        {},
        "",
    ),
    "./path": (answer(fence(edit("X = 1", "X = 3", "./pkg/util.py"))), {}, "no edit of a localized file"),
    "carried over": (
        answer(fence(UTIL, edit("Y = 2", "Y = 4", None))),
        {"pkg/util.py": "X = 3\nY = 4\n"},
        "",
    ),
    "first edit unnamed": (answer(fence(edit("Y = 2", "Y = 4", None), UTIL)), UTIL_FIXED, ""),
    "not carried across fences": (answer(fence(UTIL), fence(edit("Y = 2", "Y = 4", None))), UTIL_FIXED, ""),
    "file not shown": (answer(fence(edit("a", "b", "pkg/other.py"))), {}, "no edit of a localized file"),
}
BLOCKS = {  # duplicates once; the divider exactly =======; blocks that do not split in two skipped
    "duplicate once": (
        answer(
            fence(edit("Y = 2", "Y = 2\nZ = 3", "pkg/util.py")),
            fence(edit("Y = 2", "Y = 2\nZ = 3", "pkg/util.py")),
        ),
        {"pkg/util.py": "X = 1\nY = 2\nZ = 3\n"},
        "",
    ),  # fmt: skip
    "divider with a space": (
        answer(fence(UTIL.replace("\n=======\n", "\n======= \n"))),
        {},
        "no edit applied",
    ),
    "two dividers": (
        answer(fence(edit("X = 1\n=======\nY = 2", "X = 3", "pkg/util.py"))),
        {},
        "no edit applied",
    ),
    "empty REPLACE": (answer(fence(edit("Y = 2", "", "pkg/util.py"))), {}, "no edit applied"),
    "note after SEARCH marker": (answer(fence(UTIL.replace("SEARCH\n", "SEARCH (old)\n"))), UTIL_FIXED, ""),
}
MATCHING = {  # SEARCH a substring of the original; all checked first; applied in order, every occurrence
    "first line unindented": (
        answer(fence(edit("return a - b", "return a + b"))),
        {"pkg/core.py": BOTH_FIXED},
        "",
    ),
    "every occurrence": (
        answer(fence(edit("    return a - b", "    return a + b"))),
        {"pkg/core.py": BOTH_FIXED},
        "",
    ),
    "checked on the original": (answer(fence(UTIL, edit("X = 3", "X = 4", "pkg/util.py"))), UTIL_FIXED, ""),
    "in order": (
        answer(fence(edit("X = 1", "X = 11", "pkg/util.py"), edit("X = 1", "X = 5", "pkg/util.py"))),
        {"pkg/util.py": "X = 51\nY = 2\n"},
        "",
    ),  # the second also hits X = 11
    "not in the file": (answer(fence(edit("Z = 9", "Z = 1", "pkg/util.py"))), {}, "no edit applied"),
}
THINKING = {  # files from <solution>; edits from every python fence; no <solution>: the whole output
    "edit in think applies": (
        answer(fence(UTIL), think=f"<think>\n{fence(edit('Y = 2', 'Y = 5', 'pkg/util.py'))}\n</think>\n"),
        {"pkg/util.py": "X = 3\nY = 5\n"},
        "",
    ),  # fmt: skip
    "file only in think": (answer(fence(UTIL), think=f"<think>\n{fence(FIX)}\n</think>\n"), UTIL_FIXED, ""),
    "unclosed think": ("<think>\nlet me fix it\n" + fence(UTIL), UTIL_FIXED, ""),
    "no solution tags": ("<think>\nok\n</think>\n" + fence(UTIL), UTIL_FIXED, ""),
}
EMPTY = {  # no patch: a file that does not parse, is emptied (dropped), or only blank lines changed
    "does not parse": (answer(fence(edit("X = 1", "X = (", "pkg/util.py"))), {}, "no longer parses"),
    "REPLACE stripped to nothing": (
        answer(fence("### pkg/util.py\n<<<<<<< SEARCH\nX = 1\nY = 2\n\n=======\n\n>>>>>>> REPLACE")),
        {},
        "",
    ),
    "blank lines only": (
        answer(fence(edit("X = 1\nY = 2", "X = 1\n\nY = 2", "pkg/util.py"))),
        {},
        "blank lines only",
    ),
}
TABLES = {
    "read": READ,
    "names": NAMES,
    "blocks": BLOCKS,
    "matching": MATCHING,
    "thinking": THINKING,
    "empty": EMPTY,
}


@pytest.mark.parametrize(
    ("output", "expected", "reason"),
    [case for table in TABLES.values() for case in table.values()],
    ids=[f"{t}:{name}" for t, table in TABLES.items() for name in table],
)
def test_agentless_rule(output: str, expected: dict[str, str], reason: str) -> None:
    check(output, expected, reason)


def test_an_edit_that_does_not_split_is_skipped_and_the_others_kept() -> None:
    base = {"a.py": "X = 1", "b.py": "Y = 1\n"}
    output = answer(fence(edit("X = 1", "X = 1", "a.py").replace("=======\nX = 1", "=======\n")))
    assert post_process(output, base).problem  # an empty REPLACE does not split: nothing
    mixed = fence(
        "### a.py\n<<<<<<< SEARCH\nX = 1\n=======\n\n>>>>>>> REPLACE", edit("Y = 1", "Y = 2", "b.py")
    )
    applied = post_process(answer(mixed), base)
    assert applied.new == {"b.py": "Y = 2\n"} and applied.problem is None


@pytest.mark.parametrize("char", ["\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"])
def test_a_patch_of_a_file_with_odd_line_breaks_passes_git_apply_check(tmp_path: Path, char: str) -> None:
    old = {"pkg/mod.py": f"import os\n{char}\n# section{char}two\n\ndef f():\n    return 1\n"}
    new = {"pkg/mod.py": old["pkg/mod.py"].replace("return 1", "return 2")}
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/mod.py").write_text(old["pkg/mod.py"], encoding="utf-8", newline="")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    check_ = subprocess.run(["git", "-C", str(tmp_path), "apply", "--check", "-"],
                            input=make_patch(new, old).encode(), capture_output=True)  # fmt: skip
    assert check_.returncode == 0, check_.stderr.decode()


def test_an_empty_search_is_applied_as_str_replace_applies_it() -> None:
    """A blank SEARCH line gives an empty SEARCH: on an empty file the file becomes the REPLACE; on another the
    REPLACE goes before every character and after the last (here a ``#``, which still parses); past the limit the
    file is not built."""
    base = {"pkg/__init__.py": "", **BASE}
    init = post_process(answer(fence(edit("", "from .util import X", "pkg/__init__.py"))), base)
    assert init.problem is None and init.new == {"pkg/__init__.py": "from .util import X"}
    hashes = post_process(answer(fence(edit("", "#", "pkg/util.py"))), base)
    assert hashes.new == {"pkg/util.py": "#X# #=# #1#\n#Y# #=# #2#\n#"} and hashes.problem is None
    big = {"pkg/big.py": "X = 1\n" * 200_000}
    assert "empty SEARCH" in post_process(answer(fence(edit("", "Y = 2", "pkg/big.py"))), big).problem


def test_a_file_the_solution_leaves_empty_is_not_edited_by_the_thinking() -> None:
    """The files come from a first pass over the <solution> part that drops a file it leaves empty (an empty
    file no edit applies to); an edit of it drafted in <think> then does not count."""
    base = {"pkg/__init__.py": "", **BASE}
    draft = f"<think>\n{fence(edit('', 'from .util import X', 'pkg/__init__.py'))}\n</think>\n"
    dropped = post_process(answer(fence(edit("nothing", "X = 1", "pkg/__init__.py")), think=draft), base)
    assert dropped.new == {} and dropped.problem == "no edit of a localized file"
    assert any("leave it empty" in note for note in dropped.notes)
    kept = post_process(answer(fence(edit("", "from .util import X", "pkg/__init__.py")), think=draft), base)
    assert kept.new == {"pkg/__init__.py": "from .util import X"}  # the draft is the same edit: once
