"""Canary tests: drawn anew for each graded run and appended to every test file the command runs, some that must
fail and some that must pass (pure text; ``grading/planting.py`` writes them, ``grading/runner.py:
run_tests_logged`` reads their statuses from the channel, docs/grading.md "Canary tests").

A canary is named like the file's own tests (words of its test names and identifiers) and computes its result at
run time (a loop, a split, a sort or a filter over values drawn here), so no fixed text tells it apart. Code that
makes the file's tests pass whatever they do (its functions swapped for no-ops, a runner that swallows failures)
passes a must-fail canary too; code that drops or skips tests it does not know drops a must-pass one. Either is
``runner tampered: canary …``. Canaries are appended, so the file's line numbers do not move, as module-level
functions (pytest, sympy's runner) or methods of a new test class on the file's own test base (unittest, django).
"""

from __future__ import annotations

import builtins
import itertools
import keyword
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass

from swe_srl.benchmark.logparse import PASSED, PASSING

_TEST_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(test\w*)\s*\(", re.M)
_CLASS = re.compile(r"^class\s+(\w+)\s*\(([\w.]+)", re.M)
_WORD = re.compile(r"(?<![A-Za-z0-9])[a-z]{3,10}(?![A-Za-z0-9])")
_SPARE = ("value", "result", "item", "case", "basic", "simple", "check", "output", "input", "empty", "format")
_BASES = ("SimpleTestCase", "unittest.TestCase", "TestCase")
_RESERVED = {*keyword.kwlist, *dir(builtins), "self", "test", "total", "number", "width", "part", "top", "count", "none",
             "true", "false", "unittest"}  # fmt: skip


@dataclass(frozen=True)
class Canary:
    """One canary: the file it is in, its test name (and class), and whether it must fail."""

    path: str
    name: str
    must_fail: bool
    cls: str = ""

    def matches(self, key: str) -> bool:
        """Whether ``key``, a channel id (pytest node id or sympy ``FILE::NAME``, unittest ``name (module.Class…)``,
        sympy name), is this canary's: its name, and its file where the id names one (another file of the run may
        define a test of the same name)."""
        if "::" in key:
            reported, _, test = key.partition("::")
            return test.split("::")[-1].split("[")[0] == self.name and _same_file(reported, self.path)
        return key == self.name or key.startswith(self.name + " (")


def _words(source: str, rng: random.Random) -> list[str]:
    names = _TEST_DEF.findall(source)
    words = {w for n in names for w in n.split("_")[1:] if w.isalpha() and w.islower() and 2 < len(w) < 12}
    if len(words) < 6:
        words |= set(_WORD.findall(source)[:400])
    words -= _RESERVED
    pool = sorted(words) or list(_SPARE)
    return pool if len(pool) >= 4 else pool + list(_SPARE)


def _name(words: list[str], taken: set[str], rng: random.Random) -> str:
    """A name of 2 or 3 of ``words`` not in ``taken`` (then added to it); the spare words join them where the run
    has used up their combinations."""
    for tries in itertools.count():
        pool = words if tries < 200 else sorted({*words, *_SPARE})
        name = "test_" + "_".join(rng.sample(pool, rng.randint(2, 3)))
        if name not in taken:
            taken.add(name)
            return name
    raise AssertionError("unreachable")


def _body(words: list[str], rng: random.Random, must_fail: bool, assert_eq: str) -> list[str]:
    """Lines computing a value at run time, then an assertion on it (wrong by one step for a must-fail canary)."""
    var = rng.choice(words)
    values = [rng.randint(1, 40) for _ in range(rng.randint(3, 6))]
    kind = rng.randrange(4)
    if kind == 0:
        k = rng.randint(2, 5)
        lines = [f"{var} = {values!r}", "total = 0", f"for number in {var}:", f"    total += number * {k}"]
        got, want = "total", sum(v * k for v in values)
    elif kind == 1:
        text = " ".join(rng.sample(words, min(len(words), rng.randint(2, 4))))
        lines = [f"{var} = {text!r}.split()", f"width = sum(len(part) for part in {var}) + len({var})"]
        got, want = "width", sum(len(p) for p in text.split()) + len(text.split())
    elif kind == 2:
        lines = [f"{var} = sorted({values!r}, reverse=True)", f"top = {var}[0] - {var}[-1]"]
        got, want = "top", max(values) - min(values)
    else:
        m = rng.randint(2, 4)
        lines = [
            f"{var} = [n for n in range({values[0]}, {values[0] + 30}) if n % {m} == 0]",
            f"count = len({var})",
        ]
        got, want = "count", len([n for n in range(values[0], values[0] + 30) if n % m == 0])
    return [*lines, assert_eq.format(got, want + rng.choice((1, -1, 2)) if must_fail else want)]


def _base(source: str) -> tuple[str, str]:
    """(the test class base a unittest canary uses, an import line it needs or "")."""
    bases = [b for _, b in _CLASS.findall(source) if b.endswith("TestCase")]
    for wanted in _BASES:
        if wanted in bases:
            return wanted, ""
    if bases:
        return bases[0], ""
    return "unittest.TestCase", "" if re.search(r"^import unittest\b", source, re.M) else "import unittest"


def _class_name(source: str, words: list[str], rng: random.Random) -> str:
    own = [c for c, b in _CLASS.findall(source)]
    suffix = next((s for s in ("Tests", "Test", "TestCase") if any(c.endswith(s) for c in own)), "Tests")
    while True:
        name = "".join(w.capitalize() for w in rng.sample(words, 2)) + suffix
        if name not in own:
            return name


def draw(
    path: str,
    source: str,
    kind: str,
    rng: random.Random,
    count: int = 2,
    newline: bool | None = None,
    taken: set[str] | None = None,
) -> tuple[str, list[Canary]]:
    """(the text to append to the test file ``path`` of text ``source``, its canaries): ``count`` canaries, at least
    one of each kind, in random order; ``kind`` is the runner (``commands.RunnerKind``). ``taken``: the test names
    the run already has (every file's, and the canaries drawn so far), updated: a canary's name is unique in the run,
    as runners that report bare names (sympy's) need."""
    words = _words(source, rng)
    taken = set() if taken is None else taken
    taken |= set(_TEST_DEF.findall(source))
    fails = [True, False] + [rng.random() < 0.5 for _ in range(count - 2)]
    rng.shuffle(fails)
    newline = source.endswith("\n") if newline is None else newline
    out = ["", ""] if newline else ["", "", ""]
    canaries = []
    if kind == "unittest":
        base, needs = _base(source)
        cls = _class_name(source, words, rng)
        out += [needs, "", "", f"class {cls}({base}):"] if needs else [f"class {cls}({base}):"]
        for must_fail in fails:
            name = _name(words, taken, rng)
            canaries.append(Canary(path, name, must_fail, cls))
            body = _body(words, rng, must_fail, "self.assertEqual({}, {})")
            out += [f"    def {name}(self):", *(f"        {line}" for line in body), ""]
    else:
        for must_fail in fails:
            name = _name(words, taken, rng)
            canaries.append(Canary(path, name, must_fail))
            body = _body(words, rng, must_fail, "assert {} == {}")
            out += [f"def {name}():", *(f"    {line}" for line in body), "", ""]
    return "\n".join(out).rstrip("\n") + "\n", canaries


def _same_file(reported: str, path: str) -> bool:
    """Whether a file as a channel id names it (relative to the runner's root) is ``path`` (relative to the
    repository)."""
    return reported == path or path.endswith("/" + reported) or reported.endswith("/" + path)


def _file_of(key: str, canary: Canary, own: set[str]) -> bool:
    """Whether channel id ``key`` is a test of ``canary``'s file (``own``: that file's test names)."""
    if "::" in key:
        return _same_file(key.split("::")[0], canary.path)
    name = key.split(" (")[0]
    return name in own


def verdicts(canaries: list[Canary], statuses: Mapping[str, str], own: Mapping[str, set[str]]) -> list[str]:
    """What the canaries' statuses (in the channel's ``statuses``) say was tampered with, one line each.

    A must-fail canary reported passing is tampering; so is one of either kind missing while a test of its file has
    a status (a file that did not load or was skipped runs neither), and a must-pass canary failed while a test of
    its file passed (a fixture erroring every test of the file is not the canary's doing). Skipped is neither.
    ``own``: the test names each file defines."""
    said = []
    for canary in canaries:
        status = next((s for k, s in statuses.items() if canary.matches(k)), None)
        others = [
            s for k, s in statuses.items() if not canary.matches(k) and _file_of(k, canary, own[canary.path])
        ]
        if canary.must_fail and status in PASSING:
            said.append(f"canary {canary.path}::{canary.name} (must fail) reported {status}")
        elif status is None and others:
            said.append(
                f"canary {canary.path}::{canary.name} (must {'fail' if canary.must_fail else 'pass'}) missing"
            )
        elif not canary.must_fail and status in ("FAILED", "ERROR") and PASSED in others:
            said.append(f"canary {canary.path}::{canary.name} (must pass) reported {status}")
    return said


def own_tests(source: str) -> set[str]:
    """The test names a test file defines (functions and methods)."""
    return set(_TEST_DEF.findall(source))


def strip(tests: dict[str, str], canaries: list[Canary]) -> dict[str, str]:
    """``tests`` without the canaries' ids (they are never shown as tests)."""
    return {k: v for k, v in tests.items() if not any(c.matches(k) for c in canaries)}
