"""Semantic layer: normalized syntax-tree similarity with the location / edit / test rules."""

import pytest

from swe_srl.rewards.bash.units import action_type, action_units, split_flags
from swe_srl.rewards.semantic import semantic_similarity

GREP = "grep -rn 'def parse' src/pkg/"
EDIT = "sed -i 's/return x\\[0\\]/return x[0] if x else None/' src/pkg/core.py"
TEST = "python -m pytest tests/test_core.py::TestParse::test_empty -x"

# (expert, action, low, high): the semantic score must fall in [low, high]
CASES = [
    (GREP, GREP, 1.0, 1.0),  # identical → 1
    (GREP, "grep  -rn  'def parse'  src/pkg/", 1.0, 1.0),  # whitespace only
    (GREP, "grep -nr 'def parse' ./src/pkg", 1.0, 1.0),  # reordered flags, ./ and trailing / normalized
    (GREP, 'grep -r -n "def parse" src/pkg', 1.0, 1.0),  # split flags, other quotes
    (GREP, "rg 'def parse' src/pkg", 0.85, 0.95),  # grep vs rg for the same search
    (GREP, "git grep -n 'def parse' src/pkg", 0.85, 1.0),  # git grep is the same search too
    (GREP, "grep -rn 'def parse' tests/", 0.5, 0.7),  # different path
    (GREP, "grep -rn 'class Parser' src/pkg/", 0.6, 0.85),  # different pattern, same place
    (GREP, "pip install numpy", 0.0, 0.0),  # unrelated
    (GREP, "cat src/pkg/core.py", 0.1, 0.3),  # other location command, overlapping path
    (GREP, "ls src/pkg", 0.15, 0.3),  # listing the searched folder
    (GREP, "ls", 0.0, 0.0),  # listing the repository root locates nothing
    ("sed -n '100,114p' src/pkg/core.py", "ls", 0.0, 0.0),  # nor against a read of one file
    ("ls", "grep -rn 'def parse' .", 0.0, 0.0),  # a whole-repository search is no listing either
    (
        "cat src/pkg/core.py",
        "str_replace_editor view /testbed/src/pkg/core.py",
        1.0,
        1.0,
    ),  # cat ≈ editor view
    ("cat src/pkg/core.py", "sed -n '1,80p' src/pkg/core.py", 0.8, 0.95),  # cat ≈ sed -n, partial range
    ("sed -n '10,40p' a.py", "str_replace_editor view a.py --view_range 10 40", 1.0, 1.0),  # same lines
    ("sed -n '10,40p' a.py", "nl -ba a.py | sed -n '10,40p'", 1.0, 1.0),  # nl piped into sed -n
    ("sed -n '10,40p' a.py", "sed -n '200,240p' a.py", 0.7, 0.8),  # same file, other lines
    ("cat src/pkg/core.py", "cat src/pkg/io.py", 0.0, 0.4),  # other file
    ("find . -name '*.py' -path '*pkg*'", "find . -path '*pkg*' -name '*.py'", 1.0, 1.0),  # predicate order
    ("ls src/pkg", "ls -la src/pkg/", 0.6, 0.8),  # same dir, extra flags
    (EDIT, EDIT, 1.0, 1.0),  # identical edit
    (  # the same edit with the editor tool
        EDIT,
        "str_replace_editor str_replace /testbed/src/pkg/core.py --old_str 'return x[0]'"
        " --new_str 'return x[0] if x else None'",
        1.0,
        1.0,
    ),
    (EDIT, "sed -i 's/return x\\[0\\]/return x[0] if x else None/' src/pkg/io.py", 0.0, 0.3),  # wrong file
    (EDIT, "sed -i 's/return x\\[0\\]/return None/' src/pkg/core.py", 0.5, 0.85),  # other replacement
    (  # the change matters: the wrong operator on the right line is well below an equivalent fix
        "sed -i 's/return a - b/return a + b/' calc.py",
        "sed -i 's/return a - b/return a * b/' calc.py",
        0.4,
        0.6,
    ),
    (
        "sed -i 's/return a - b/return a + b/' calc.py",
        "sed -i 's/return a - b/return (a + b)/' calc.py",
        1.0,
        1.0,
    ),
    (  # python -c writes are edits too
        "sed -i 's/a - b/a + b/' calc.py",
        "python -c \"import pathlib; p = pathlib.Path('calc.py'); p.write_text(p.read_text().replace('a - b', 'a + b'))\"",
        1.0,
        1.0,
    ),
    (EDIT, "cat src/pkg/core.py", 0.0, 0.0),  # an edit vs a read
    (  # Python compared by AST: formatting and quotes do not matter
        "str_replace_editor create a.py --file_text 'x = {\"a\": 1}\n'",
        "cat > a.py <<'EOF'\nx = {'a' : 1}\nEOF",
        1.0,
        1.0,
    ),
    (TEST, "pytest tests/test_core.py::TestParse::test_empty", 0.85, 0.95),  # runner flavour, flags differ
    (TEST, "python -m pytest tests/test_core.py::TestParse::test_other -x", 0.75, 0.95),  # other function
    (TEST, "python -m pytest tests/test_io.py -x", 0.2, 0.5),  # other file
    (TEST, "ls tests", 0.0, 0.0),  # not a test run
    ("cd /testbed && " + GREP, GREP, 0.85, 0.95),  # an extra cd costs little
    (GREP + " && cat src/pkg/core.py", "cat src/pkg/core.py && " + GREP, 0.85, 0.95),  # order swapped
    ("grep -n foo src/a.py", "cat src/a.py | grep -n foo", 1.0, 1.0),  # the text read is searched
    ("grep -rn foo src", "find src -type f | xargs grep -n foo", 1.0, 1.0),  # the files found are searched
    ("grep -rn foo src", "find src | grep foo", 0.1, 0.3),  # file names filtered, not their content
    ("grep -rn foo src", "grep -rn foo src | grep -v test", 0.85, 0.95),  # a pipe filter costs little
    ("grep -rn foo src", "grep -rn foo src && pip install foo", 0.4, 0.6),  # an extra command costs more
    ("git diff", "git status", 0.3, 0.3),  # two different git reads
    ("git diff", "git diff --stat", 0.6, 0.85),  # the same read, another flag
    (  # precision: an extra edit costs more than an extra read
        EDIT,
        EDIT + " && sed -i 's/y = 1/y = 2/' src/pkg/core.py",
        0.6,
        0.7,
    ),
    (EDIT, EDIT + " && git diff", 0.75, 0.85),  # an extra read after the same edit
    ("submit", "submit", 1.0, 1.0),  # submit
    ("submit", "ls", 0.0, 0.0),  # submit vs anything else
    ("", "ls", 0.0, 0.0),  # empty expert
]


@pytest.mark.parametrize(("expert", "action", "low", "high"), CASES)
def test_semantic_cases(expert: str, action: str, low: float, high: float) -> None:
    score = semantic_similarity(expert, action)
    assert low <= score <= high, f"{score:.3f} not in [{low}, {high}]"


def test_fuzzy_relaxes_names_and_constants() -> None:
    expert = "python -c 'import mod; print(mod.parse(\"abc\"))'"
    action = "python -c 'import mod; print(mod.parse(\"xyz\"))'"
    strict = semantic_similarity(expert, action)
    assert strict < 1.0
    assert semantic_similarity(expert, action, fuzzy=True) == 1.0


def test_flags_and_types() -> None:
    flags, positional = split_flags("grep", ["-rnA", "3", "--include=*.py", "foo", "."])
    assert flags == {"-r", "-n", "-A=3", "--include=*.py"} and positional == ["foo", "."]
    assert [action_type(a) for a in (GREP, EDIT, TEST, "submit", "git status")] == [
        "location",
        "edit",
        "test",
        "submit",
        "other",
    ]
    (unit,) = action_units("head -n 30 ./src/a.py")
    assert (unit.family, unit.paths, unit.span) == ("view", ("src/a.py",), (1, 30))
