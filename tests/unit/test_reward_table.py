"""The orderings the layered reward must respect: (expert, better, worse) as a good engineer would judge them.

Each row: against the expert's action at one step, ``better`` is the action an engineer would rather see than
``worse``. The layered reward (effect off, the training default) must score ``better`` above ``worse`` by at least
``MARGIN`` in at least ``REQUIRED`` of the rows; the paper's reward (``srl``) is measured on the same rows for
comparison (printed, not required).
"""

from difflib import SequenceMatcher

import pytest

from swe_srl.core.actions import format_output
from swe_srl.rewards import score_output

MARGIN = 0.05
REQUIRED = 0.9

ADD_SED = "sed -i 's/return a - b/return a + b/' calc.py"
ADD_EDITOR = "str_replace_editor str_replace calc.py --old_str 'return a - b' --new_str 'return a + b'"
REPRO = "from calc import add\nprint(add(1, 2))\n"
PY_WRITE = (
    "python -c \"from pathlib import Path; p = Path('calc.py'); p.write_text(p.read_text().replace({}))\""
)
GUARD = "str_replace_editor str_replace src/pkg/core.py --old_str '    return x[0]' --new_str '{}'"

# (expert, better, worse)
CASES = [
    # --- location: grep / rg / find -------------------------------------------------------------------------
    ("grep -rn foo src", "rg foo src", "grep -rn bar src"),  # equivalent tool beats the wrong pattern
    ("grep -rn foo src", "ls", "pytestbedit"),  # a made-up command word (bash: command not found) is worst
    ("grep -rn foo src", "ls", "rm -rf /testbed"),  # deleting the repository ranks below a harmless look
    ("grep -rn foo src", 'grep -rn "foo src', "rm -rf src"),  # a harmless syntax error beats deleting sources
    ("grep -rn foo src", "ls", "grep -rn foo src; rm -rf src"),  # the right search plus a deletion is harmful
    (  # the same search through find | xargs beats the right search followed by a deletion
        "grep -rn foo src",
        "find src -name '*.py' | xargs grep -n foo",
        "grep -rn foo src; rm -rf src",
    ),
    ("grep -rn foo src", "grep -rn foo src | head -50", "grep -rn foo src && pip install foo"),  # extra work
    ("grep -rn foo src", "rg -n foo src/", "grep -rn foo tests"),  # same search beats searching elsewhere
    (  # git grep is the same search; discarding the output makes the search pointless
        "grep -rn 'def parse' src/pkg",
        "git grep -n 'def parse' src/pkg",
        "grep -rn 'def parse' src/pkg > /dev/null",
    ),
    (  # a broader search still finds it; redirecting into a tracked source file destroys it
        "grep -rn 'def parse' src/pkg",
        "grep -rn 'def parse' src",
        "grep -rn 'def parse' src/pkg > src/pkg/__init__.py",
    ),
    (  # predicate order does not matter; -delete removes every Python file
        "find . -name '*.py' -path '*parser*'",
        "find . -path '*parser*' -name '*.py'",
        "find . -name '*.py' -delete",
    ),
    (  # a shallower find for the same file beats deleting every config file
        "find . -name setup.cfg",
        "find . -maxdepth 2 -name setup.cfg",
        "find . -name '*.cfg' -exec rm {} +",
    ),
    ("find_file parser.py", "find . -name parser.py", "find_files parser.py"),  # harness tool vs made-up name
    ("search_dir 'def parse' src", "grep -rn 'def parse' src", "search_dir 'def parse' docs"),  # wrong place
    ("grep -rn foo src", "grep -rni foo src", "gerp -rn foo src"),  # a typo in the command word fails in bash
    # --- view: cat / sed -n / head / editor view / open -----------------------------------------------------
    ("cat src/a.py", "sed -n '1,200p' src/a.py", "cat src/a.py > /dev/null"),  # a read, its output discarded
    ("cat src/a.py", "str_replace_editor view /testbed/src/a.py", "cat src/b.py"),  # editor view vs b.py
    ("sed -n '100,114p' src/a.py", "ls src", "ls"),  # listing the file's folder beats listing the root
    (  # the same lines in the editor vs deleting those lines (sed -i instead of -n)
        "sed -n '100,160p' src/a.py",
        "str_replace_editor view src/a.py --view_range 100 160",
        "sed -i '100,160d' src/a.py",
    ),
    ("head -n 40 src/a.py", "sed -n '1,40p' src/a.py", "head -n 40 src/a.py > src/a.py"),  # truncates it
    ("open src/a.py 120", "sed -n '70,170p' src/a.py", "open src/b.py 120"),  # same window vs another file
    ("str_replace_editor view src/a.py", "cat -n src/a.py", "catt src/a.py"),  # a typo: command not found
    ("cat setup.py", "cat ./setup.py", "cat setup.cfg"),  # the same file vs another file
    ("ls src/pkg", "find src/pkg -maxdepth 1", "ls src/other"),  # listing the same folder vs another
    ("ls", "ls -la", "rm -rf *"),  # listing vs deleting everything
    ("cat calc.py", "cat calc.py | head", ": > calc.py"),  # reading vs truncating the file
    ("cat calc.py", "cat -n calc.py", "cat calc.py; cat setup.py; cat README.md; ls -R"),  # extra reads cost
    ("str_replace_editor view src/a.py", "open src/a.py", "opne src/a.py"),  # a typo: command not found
    # --- edit: str_replace_editor / sed -i / heredoc / python -c write --------------------------------------
    (ADD_SED, ADD_EDITOR, "sed -i 's/return a - b/return a * b/' calc.py"),  # same fix vs wrong operator
    (ADD_EDITOR, ADD_EDITOR.replace("'return a + b'", "'return (a + b)'"), ADD_EDITOR.replace("+", "*")),
    (ADD_EDITOR, ADD_SED, ADD_SED.replace("calc.py", "tests/test_calc.py")),  # same edit vs the wrong file
    (  # an equivalent guard vs dropping the behaviour
        GUARD.format("    if not x:\n        return None\n    return x[0]"),
        GUARD.format("    if len(x) == 0:\n        return None\n    return x[0]"),
        GUARD.format("    return None"),
    ),
    (  # the same new file by heredoc vs overwriting the module under test with it
        f"str_replace_editor create reproduce.py --file_text '{REPRO}'",
        f"cat > reproduce.py <<'EOF'\n{REPRO}EOF",
        f"cat > calc.py <<'EOF'\n{REPRO}EOF",
    ),
    (  # the same file by printf vs the same heredoc with broken Python
        f"cat > reproduce.py <<'EOF'\n{REPRO}EOF",
        "printf 'from calc import add\\nprint(add(1, 2))\\n' > reproduce.py",
        "cat > reproduce.py <<'EOF'\nfrom calc import add\nprint(add(1, 2)\nEOF",
    ),
    (PY_WRITE.format("'a - b', 'a + b'"), ADD_SED, PY_WRITE.format("'a - b', 'a * b'")),  # python -c edit
    (  # a targeted edit vs overwriting the whole file with one line
        "sed -i 's/timeout=10/timeout=30/' src/client.py",
        "sed -i 's/timeout=10/timeout=30/g' src/client.py",
        "echo 'timeout=30' > src/client.py",
    ),
    (  # the same insertion by sed vs inserting the wrong import
        "str_replace_editor insert src/a.py --insert_line 10 --new_str '    import os'",
        "sed -i '10a\\    import os' src/a.py",
        "str_replace_editor insert src/a.py --insert_line 10 --new_str '    import sys'",
    ),
    (  # SWE-agent edit: an equivalent line vs the wrong operator
        "edit 12:12 <<'end_of_edit'\n    return a + b\nend_of_edit",
        "edit 12:12 <<'end_of_edit'\n    return (a + b)\nend_of_edit",
        "edit 12:12 <<'end_of_edit'\n    return a * b\nend_of_edit",
    ),
    (ADD_SED, ADD_SED + " && python -m pytest tests -q", "git checkout calc.py"),  # fix + test vs discarding
    (  # the same fix with the indentation in the match vs a change that changes nothing
        ADD_EDITOR,
        ADD_EDITOR.replace("'return a", "'    return a"),
        ADD_EDITOR.replace("'return a + b'", "'return a - b  # TODO'"),
    ),
    (ADD_SED, ADD_SED + " && git diff", ADD_SED + " && sed -i 's/a \\* b/a + b/' calc.py"),  # an unasked edit
    # --- test runs ------------------------------------------------------------------------------------------
    ("pytest tests/test_calc.py", "python -m pytest tests/test_calc.py", "pytest tests/test_io.py"),  # runner
    (  # the same -k selection with -x vs another selection
        "python -m pytest tests/test_calc.py -k add",
        "pytest tests/test_calc.py -k add -x",
        "python -m pytest tests/test_calc.py -k sub",
    ),
    (  # the same test by -k vs deleting the failing test file to get a green run
        "python -m pytest tests/test_calc.py::test_add",
        "python -m pytest tests/test_calc.py -k test_add",
        "rm -f tests/test_calc.py && python -m pytest tests",
    ),
    (  # flag order vs discarding the test output
        "python -m pytest tests/test_calc.py -q",
        "pytest -q tests/test_calc.py",
        "python -m pytest tests/test_calc.py -q > /dev/null",
    ),
    ("python -m pytest tests", "pytest tests", "pytestbedit tests"),  # the collapse word of the default run
    (  # unittest vs pytest on the same module beats the same runner on another module
        "python -m unittest tests.test_calc",
        "python -m pytest tests/test_calc.py",
        "python -m unittest tests.test_io",
    ),
    # --- inline Python ---------------------------------------------------------------------------------------
    (  # other quotes, same code vs code that does not parse
        "python -c 'import calc; print(calc.add(1, 2))'",
        'python3 -c "import calc; print(calc.add(1, 2))"',
        "python -c 'import calc; print(calc.add(1, 2)'",
    ),
    (  # the same call imported differently vs calling another function
        "python -c 'import calc; print(calc.add(1, 2))'",
        "python -c 'from calc import add; print(add(1, 2))'",
        "python -c 'import calc; print(calc.sub(1, 2))'",
    ),
    (  # the same information vs discarding the output
        "python -c 'import sys; print(sys.version)'",
        "python --version",
        "python -c 'import sys; print(sys.version)' > /dev/null",
    ),
    (  # the same check by -c vs a check with the wrong expected value
        "python - <<'EOF'\nfrom calc import add\nassert add(2, 2) == 4\nEOF",
        "python -c 'from calc import add; assert add(2, 2) == 4'",
        "python - <<'EOF'\nfrom calc import add\nassert add(2, 2) == 5\nEOF",
    ),
    # --- git ------------------------------------------------------------------------------------------------
    ("git status", "git status --short", "git reset --hard"),  # look vs throw away all changes
    ("git diff", "git diff calc.py", "git checkout ."),  # look vs discard every edit
    ("git log --oneline -5", "git log -5", "git clean -fdx"),  # look vs delete untracked files
    ("git diff", "git status", "git checkout -- calc.py"),  # another look vs discarding the edit
    ("git show HEAD --stat", "git log -1 --stat", "git reset --hard HEAD~1"),  # look vs dropping a commit
    (  # the expert's own revert of one file vs discarding every change
        "git checkout calc.py",
        "git checkout -- calc.py",
        "git checkout .",
    ),
    # --- submit ---------------------------------------------------------------------------------------------
    ("submit", "git diff", "git checkout . && submit"),  # reviewing the patch vs discarding it and submitting
    ("submit", "git diff --stat", "submitt"),  # a typo of submit: command not found
    # --- destructive and made-up commands -------------------------------------------------------------------
    ("rm reproduce.py", "rm -f reproduce.py", "rm -rf ."),  # the expert's own deletion vs deleting everything
    ("pip install -e .", "pip install -e . -q", "pip uninstall -y calc"),  # install vs removing the package
    ("grep -rn foo src", "grep -rn foo", "rm -rf src/ && grep -rn foo ."),  # deleting before searching
    ("ls src", "ls -R src", "lsx src"),  # a made-up command word
    # --- held out: written after the reward change, before measuring it (19 of 20 held; the miss was the editor's
    # view of a folder read as a file, then fixed) -----------------------------------------------------------------
    ("grep -rn 'class Foo' .", "grep -rn 'class Foo' --include=*.py .", "grep -rn 'class Bar' ."),  # pattern
    ("grep -rn 'class Foo' .", "rg 'class Foo'", "rm -rf build && grep -rn 'class Foo' ."),  # deletes build/
    ("cat -n src/x.py | sed -n '20,60p'", "sed -n '20,60p' src/x.py", "sed -n '200,260p' src/x.py"),  # lines
    (  # a slightly wider window on the same file vs the same lines of another file
        "str_replace_editor view src/x.py --view_range 20 60",
        "sed -n '15,65p' src/x.py",
        "sed -n '20,60p' src/y.py",
    ),
    (  # the same replacement by the editor vs the opposite operator
        "sed -i 's/==/is/' src/x.py",
        "str_replace_editor str_replace src/x.py --old_str '==' --new_str 'is'",
        "sed -i 's/==/!=/' src/x.py",
    ),
    (  # the same fix by sed vs the inverted condition
        "str_replace_editor str_replace src/x.py --old_str 'if x == None:' --new_str 'if x is None:'",
        "sed -i 's/if x == None:/if x is None:/' src/x.py",
        "str_replace_editor str_replace src/x.py --old_str 'if x == None:' --new_str 'if x is not None:'",
    ),
    (  # the same test without -x vs the whole file
        "python -m pytest tests/test_x.py::TestA::test_b -x",
        "pytest tests/test_x.py::TestA::test_b",
        "pytest tests/test_x.py",
    ),
    (  # the same run with its tail vs the whole suite
        "python -m pytest tests/test_x.py",
        "python -m pytest tests/test_x.py -q 2>&1 | tail -20",
        "python -m pytest tests/",
    ),
    ("python reproduce.py", "python3 reproduce.py", "python setup.py install"),  # the script vs an install
    ("git diff", "git --no-pager diff", "git stash"),  # the same diff vs hiding the changes
    ("git status", "git diff --stat", "git add -A && git commit -m wip"),  # a look vs committing
    ("ls -la", "ls", "lls"),  # a made-up command word
    (
        "find . -name '*.py' | grep test",
        "find . -name '*test*.py'",
        "find . -name '*.py' | xargs rm",
    ),  # deletes
    (  # the same file by the editor vs a test of another function
        "cat > test_fix.py <<'EOF'\nfrom x import f\nassert f(1) == 2\nEOF",
        "str_replace_editor create test_fix.py --file_text 'from x import f\nassert f(1) == 2\n'",
        "cat > test_fix.py <<'EOF'\nfrom x import g\nassert g(1) == 2\nEOF",
    ),
    (
        "pip install -e .",
        "pip install -e . 2>&1 | tail -3",
        "pip install -e . && rm -rf .git",
    ),  # deletes .git
    ("submit", "submit", "echo submit"),  # submitting vs printing the word
    (  # the same run without the cd vs another test file
        "cd /testbed && python -m pytest tests/test_x.py",
        "python -m pytest tests/test_x.py",
        "cd /testbed && python -m pytest tests/test_y.py",
    ),
    (
        "str_replace_editor view /testbed",
        "ls /testbed",
        "str_replace_editor view /testbed/setup.py",
    ),  # a folder
    (
        "grep -n 'def f' src/x.py",
        "search_file 'def f' src/x.py",
        "grep -n 'def g' src/x.py",
    ),  # harness search
    (  # the same call spelled through the module vs printing the function object
        "python -c 'from x import f; print(f(0))'",
        "python -c 'import x; print(x.f(0))'",
        "python -c 'from x import f; print(f)'",
    ),
]


def layered(expert: str, action: str) -> float:
    """The layered reward (effect off) of an action, as ``swe-srl reward --mode layered`` computes it."""
    return score_output(format_output("", action), expert, mode="layered").total


def paper(expert: str, action: str) -> float:
    """The paper's reward (``srl``) of an action."""
    return score_output(format_output("", action), expert, mode="srl").total


def ordered_rate(reward) -> tuple[float, list[str]]:
    """Share of rows where ``better`` beats ``worse`` by MARGIN, and a line per row that does not."""
    misses = []
    for expert, better, worse in CASES:
        b, w = reward(expert, better), reward(expert, worse)
        if b - w < MARGIN:
            misses.append(f"{expert!r}: better {better!r} {b:.3f}, worse {worse!r} {w:.3f}")
    return 1 - len(misses) / len(CASES), misses


def test_table_is_large_and_distinct() -> None:
    assert len(CASES) >= 50
    assert all(len({b, w}) == 2 for e, b, w in CASES)


def test_layered_orders_the_table() -> None:
    rate, misses = ordered_rate(layered)
    paper_rate, _ = ordered_rate(paper)
    print(f"\nlayered (effect off): {rate:.1%} of {len(CASES)} rows; paper reward: {paper_rate:.1%}")
    print("\n".join(misses))
    assert rate >= REQUIRED, "\n".join(misses)


@pytest.mark.parametrize("expert", sorted({e for e, _, _ in CASES}))
def test_expert_scores_one_against_itself(expert: str) -> None:
    assert layered(expert, expert) == pytest.approx(1.0)


@pytest.mark.parametrize(("expert", "action"), [(e, a) for e, b, w in CASES[:12] for a in (b, w)])
def test_paper_reward_is_difflib_ratio(expert: str, action: str) -> None:
    normalized = " ".join(expert.split()), " ".join(action.split())
    assert paper(expert, action) == SequenceMatcher(None, *normalized).ratio()
