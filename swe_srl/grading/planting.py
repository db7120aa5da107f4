"""Where a graded run's canary tests go and how they are written (``grading/canaries.py`` draws them and reads
their verdicts): the test files the command runs (:func:`canary_targets`), their outlines read in one command, and
one command appending the canaries (:func:`plant`, called by ``grading/runner.py: run_tests_logged``)."""

from __future__ import annotations

import random
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.specs import test_files
from swe_srl.errors import SandboxError
from swe_srl.grading.canaries import Canary, draw, own_tests, verdicts
from swe_srl.infra.sandbox.base import Sandbox


@dataclass
class Planted:
    """The canaries written into a run's test files, each file's own test names, and the test ids to add to the
    command (a file the command selects tests of, ``path::test``, gets its canaries named too)."""

    canaries: list[Canary] = field(default_factory=list)
    own: dict[str, set[str]] = field(default_factory=dict)
    selectors: list[str] = field(default_factory=list)

    def verdicts(self, statuses: Mapping[str, str]) -> list[str]:
        return verdicts(self.canaries, statuses, self.own)


@dataclass(frozen=True)
class Target:
    """A test file the command runs: where it may be (the first that exists), and how the command selects in it."""

    candidates: tuple[str, ...]
    selected: bool = False
    """The command names tests or classes in it (``file.py::Test::test_x``, django's ``module.Class``)."""
    modules: tuple[str, ...] = ()
    """unittest labels: each candidate's module label (``admin_views.tests``), to name the canaries' class by."""
    folder: bool = False
    """A folder a pytest command runs (``pytest tests``): every file under it named as pytest's default
    ``python_files`` names test modules (``test_*.py``, ``*_test.py``)."""


def canary_targets(instance: Instance, kind: str | None = None) -> list[Target]:
    """The test files the command of runner ``kind`` runs: its directives (paths, ``path::id``; a pytest or tox
    folder: the test files under it), unittest labels as modules (django's under ``tests/``): ``a.b.Class`` is the
    file ``a/b/Class.py`` if it is there, else ``a/b.py`` selected."""
    out = []
    for entry in dict.fromkeys(test_files(instance)):
        path, _, ids = entry.partition("::")
        if kind in ("pytest", "tox") and not path.endswith(".py") and not ids:
            out.append(
                Target((path.rstrip("/") + "/",), folder=True)
            )  # a folder (a file of other text: none)
            continue
        if path.endswith(".py") or "/" in path:
            out.append(Target((path,), bool(ids)) if path.endswith(".py") else None)
            continue
        parts, root = path.split("."), "tests/" if instance.repo == "django/django" else ""
        modules = tuple(".".join(parts[:k]) for k in range(len(parts), 0, -1))
        paths = tuple(root + m.replace(".", "/") + ".py" for m in modules)
        out.append(Target(paths, False, modules))
    return [t for t in out if t is not None]


_OUTLINE = r"^[[:space:]]*(async[[:space:]]+)?def[[:space:]]|^class[[:space:]]|^import[[:space:]]+unittest"


def _outlines(sandbox: Sandbox, paths: list[str]) -> dict[str, str]:
    """Each of ``paths`` that is a file (a folder, ending in ``/``: each test file under it) → its ``def``,
    ``class`` and ``import unittest`` lines, all :func:`draw` reads of a file, in one command (one ``grep``; a
    whole file's bytes cost more to move)."""
    files = " ".join(shlex.quote(p) for p in paths if not p.endswith("/"))
    folders = " ".join(shlex.quote(p) for p in paths if p.endswith("/"))
    script = (
        f'cd /testbed; fs=(); for f in {files}; do [ -f "$f" ] && fs+=("$f"); done; for d in {folders}; do '
        '[ -d "$d" ] && mapfile -t -O "${#fs[@]}" fs < <(find "$d" -type f \\( -name "test_*.py" -o -name '
        '"*_test.py" \\) -not -path "*/.*" | LC_ALL=C sort); done; for f in "${fs[@]}"; do echo "@@swe-srl-file '
        f'$f"; done; [ ${{#fs[@]}} -gt 0 ] && grep -H -E \'{_OUTLINE}\' "${{fs[@]}}" 2>/dev/null; true'
    )
    lines = sandbox.run(script, timeout=120).output.split("\n")
    out = {ln.removeprefix("@@swe-srl-file "): [] for ln in lines if ln.startswith("@@swe-srl-file ")}
    for line in lines:
        for path in out:  # grep -H: PATH:LINE
            if line.startswith(path + ":"):
                out[path].append(line[len(path) + 1 :])
                break
    return {path: "\n".join(found) + "\n" for path, found in out.items()}


def _files(target: Target, sources: Mapping[str, str]) -> list[tuple[int, str]]:
    """(candidate index, path) of each file of ``target`` that is there: the first candidate found; a folder's all."""
    if target.folder:
        return [(0, p) for p in sources if p.startswith(target.candidates[0])]
    return next(([(k, p)] for k, p in enumerate(target.candidates) if p in sources), [])


def _plan(
    targets: list[Target], sources: Mapping[str, str], kind: str, rng: random.Random
) -> tuple[Planted, list[str]]:
    """(the canaries, the shell commands appending them) for ``targets`` of outlines ``sources`` (path → text).

    A file that is not there, or that defines no test (a module of sphinx's ``tests/roots/``, a ``conf.py``, a
    helper the test patch edits), gets none: it has no tests to guard, and functions appended to a module the tests
    document or import (autodoc's ``:members:``, ``from m import *``) would change what they see."""
    planted, appends = Planted(), []
    own = {path: own_tests(source) for path, source in sources.items()}
    taken = set().union(*own.values())  # the run's test names: no canary takes one
    for target, k, path in ((t, k, p) for t in targets for k, p in _files(t, sources)):
        if path in planted.own or not own[path]:
            continue
        source = sources[path]  # whether the file ends with a newline is not read: one more blank line then
        text, canaries = draw(
            path, source, "unittest" if kind == "unittest" else "functions", rng, newline=False, taken=taken
        )
        # a quoted here-document: the text is code drawn here from [a-z_] words, digits and punctuation
        appends.append(f"cat >> {shlex.quote(path)} <<'SWE_SRL_CANARY'\n{text}SWE_SRL_CANARY\n")
        planted.canaries += canaries
        planted.own[path] = own[path]
        if target.selected and kind in ("pytest", "tox"):
            planted.selectors += [shlex.quote(f"{path}::{c.name}") for c in canaries]
        if k > 0 and kind == "unittest":  # the label named a class (or test) of this module
            planted.selectors.append(shlex.quote(f"{target.modules[k]}.{canaries[0].cls}"))
    return planted, appends


def plant(sandbox: Sandbox, instance: Instance, kind: str, rng: random.Random | None = None) -> Planted:
    """Append fresh canaries to each test file the command of runner ``kind`` runs (:func:`_plan`: a file that is
    not there or defines no test is left alone); where the command selects tests of a file, it gets its canaries'
    ids too. Two commands in all: one reads their outlines, one appends to them."""
    targets = canary_targets(instance, kind)
    sources = (
        _outlines(sandbox, list(dict.fromkeys(p for t in targets for p in t.candidates))) if targets else {}
    )
    planted, appends = _plan(targets, sources, kind, rng or random.SystemRandom())
    if appends:
        done = sandbox.run("cd /testbed && set -e\n" + "".join(appends), timeout=120)
        if done.exit_code != 0:
            raise SandboxError(f"the canaries could not be written: {done.output[-500:]}")
    return planted
