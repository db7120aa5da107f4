"""Syntax layer: tree-sitter-bash errors and the Python an action writes or edits inline."""

import pytest

from swe_srl.rewards.context import StepContext
from swe_srl.rewards.syntax import (
    check_python_files,
    edited_python_paths,
    fragment_parses,
    syntax_layer,
    syntax_score,
)

HEREDOC_OK = "cat > fix.py <<'EOF'\ndef f(x):\n    return x + 1\nEOF"
HEREDOC_BAD = "cat > fix.py <<'EOF'\ndef f(x)\n    return x + 1\nEOF"

CASES = [
    ("ls -la src/", 1.0),  # plain command
    ("grep -rn 'def foo' src/ | head -20 && cd /testbed", 1.0),  # pipeline and && chain
    ('echo "unterminated', 0.0),  # broken quoting → tree-sitter ERROR/MISSING
    ("grep -rn 'foo src/", 0.0),  # unclosed single quote
    ("echo (", 0.0),  # stray paren
    ("if [ -f a ]; then echo hi", 0.0),  # if without fi → MISSING node
    ("python -c 'import os; print(os.getcwd())'", 1.0),  # inline Python that parses
    ("python3 -c 'def f(:'", 0.0),  # inline Python that does not parse
    ("python - <<'EOF'\nprint(1)\nEOF", 1.0),  # Python heredoc on stdin
    ("python3 <<'EOF'\nprint(1\nEOF", 0.0),  # broken Python heredoc on stdin
    (HEREDOC_OK, 1.0),  # heredoc into a .py file, valid
    (HEREDOC_BAD, 0.0),  # heredoc into a .py file, colon-less def
    ("cat <<'EOF' > notes.txt\ndef f(\nEOF", 1.0),  # not a .py file: content not checked
    ("echo 'def broken(:' >> pkg/mod.py", 0.0),  # appending a line that cannot be Python
    ("sed -i 's/x = 1/x = 2/' a.py", 1.0),  # plain sed replacement
    ("sed -i 's/f(a)/f(a/' a.py", 0.0),  # sed leaves an unbalanced paren
    ("sed -i 's/^def f(x):$/def f(x)/' a.py", 0.0),  # sed drops the colon of a def line
    ("sed -i 's/    def f(self):/    def f(self)/' pkg/a.py", 0.0),  # same, indented, unanchored
    ("sed -i 's/foo(/bar(/g' a.py", 1.0),  # both sides partial: undecidable, passes
    ("sed -i 's/\\(x\\) = 1/\\1 = (/' a.py", 1.0),  # back-reference: undecidable, passes
    ("sed -i 's/f(a)/f(a/' notes.md", 1.0),  # not a Python file
    ("sed -i '10a\\    return None' a.py", 1.0),  # appended line is valid Python
    ("sed -i '10a\\    return (None' a.py", 0.0),  # appended line is not
    ("sed -n 's/f(a)/f(a/p' a.py", 1.0),  # no -i: nothing is edited
    ("str_replace_editor create /testbed/new.py --file_text 'x = 1\n'", 1.0),  # editor create, valid
    ("str_replace_editor create /testbed/new.py --file_text 'x = = 1'", 0.0),  # editor create, invalid
    (
        "str_replace_editor str_replace a.py --old_str 'return x' --new_str 'return x +'",
        0.0,
    ),  # breaks a statement
    (
        "str_replace_editor str_replace a.py --old_str '    else:' --new_str '    elif y:'",
        1.0,
    ),  # block headers
    ("str_replace_editor str_replace a.py --old_str 'a,' --new_str 'a, b,'", 1.0),  # list items: undecidable
    (
        "str_replace_editor insert a.py --insert_line 3 --new_str '    x = [1,'",
        0.0,
    ),  # inserted line is broken
    ("", 1.0),  # empty action: nothing to reject here (the format layer rejects it)
]


@pytest.mark.parametrize(("action", "expected"), CASES)
def test_syntax_cases(action: str, expected: float) -> None:
    assert syntax_score(action) == expected


FRAGMENTS = [
    ("x = 1", True),  # statement
    ("def f(x):", True),  # block header completed with pass
    ("        return x\n    y = 2", True),  # first line deeper than the rest
    ("else:\n    y = 1", True),  # continuation clause
    ("except ValueError:", True),  # continuation clause header
    ("f(a", False),  # unbalanced
    ("def f(x)", False),  # header without colon
]


@pytest.mark.parametrize(("code", "expected"), FRAGMENTS)
def test_fragment_rule(code: str, expected: bool) -> None:
    assert fragment_parses(code) is expected


def test_check_python_files_after_execution() -> None:
    files = {"ok.py": b"x = 1\n", "bad.py": b"def f(:\n", "data.txt": b"def f(:\n"}

    def read(path: str) -> bytes:
        if path not in files:
            raise FileNotFoundError(path)
        return files[path]

    problems = check_python_files(read, ["ok.py", "bad.py", "data.txt", "deleted.py"])
    assert len(problems) == 1 and problems[0].startswith("bad.py:1:")


def test_edited_python_paths() -> None:
    action = (
        "sed -i 's/a/b/' ./pkg/a.py notes.md && str_replace_editor create /testbed/pkg/b.py --file_text 'x'"
    )
    assert edited_python_paths(action) == ["pkg/a.py", "pkg/b.py"]


# (action, executables, created_files, expert, expected syntax score)
WORDS = [
    ("pytestbedit tests", None, None, "", 0.0),  # made-up command word: bash says "command not found"
    ("gerp -rn foo src", None, None, "", 0.0),  # a typo of grep
    ("ls | xargs -0 grepx foo", None, None, "", 0.0),  # the command xargs runs is checked too
    ("rg foo src && python3.11 -m pytest -q", None, None, "", 1.0),  # default set: rg, versioned python
    ("f() { ls; }; f", None, None, "", 1.0),  # a function the action defines
    ("find_file parser.py && submit", None, None, "", 1.0),  # harness tools and submit
    ("$PY -c 'print(1)'", None, None, "", 1.0),  # an expansion is not judged
    ("./reproduce.sh", None, None, "", 1.0),  # created files unknown: a path may exist
    ("./reproduce.sh", None, frozenset({"reproduce.sh"}), "", 1.0),  # an earlier step created it
    ("./reproduce.sh", None, frozenset(), "", 0.0),  # nothing created it
    ("/usr/bin/python3 x.py", None, None, "", 1.0),  # a system path: its basename is known
    ("rg foo src", frozenset({"grep", "ls"}), None, "", 0.0),  # the image has no rg
    ("mytool --check", frozenset({"mytool"}), None, "", 1.0),  # the image has it
    ("mytool --check", None, None, "mytool --fix", 1.0),  # the expert's own command words are known
]


@pytest.mark.parametrize(("action", "executables", "created", "expert", "expected"), WORDS)
def test_command_words(action: str, executables, created, expert: str, expected: float) -> None:
    ctx = StepContext(expert, action, executables=executables, created_files=created)
    assert syntax_score(action, ctx) == expected


def test_expert_action_passes_its_own_syntax_layer() -> None:
    broken = 'pytestbedit "unterminated'
    assert syntax_score(broken, StepContext("ls", broken)) == 0.0  # a bash error stays an error elsewhere
    assert syntax_layer(StepContext(broken, broken)) == 1.0
    assert syntax_layer(StepContext("grep -rn foo src", "lsx", executables=frozenset({"lsx"}))) == 1.0
