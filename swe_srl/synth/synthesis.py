"""Task synthesis: inject AST bugs into a real library, keep those its own tests catch, emit SWE-bench records.

A kept mutation makes some tests fail (FAIL_TO_PASS) while every other test that passed on the clean tree still
passes (PASS_TO_PASS). The instance's repo holds one commit with the MUTATED code; the gold patch is the fix.
Test runs go through a :class:`TestRunner`: in a container (:class:`SandboxRunner`) or on the host
(:class:`LocalRunner`, for quick synthesis of pure-Python libraries).
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol

from swe_srl.benchmark.logparse import PASSED, PYTEST_REPORT_PLUGIN, parse_report
from swe_srl.benchmark.repos import git_snapshot
from swe_srl.errors import TaskError
from swe_srl.grading.runner import run_tests_logged
from swe_srl.synth.mutations import apply_site, find_sites, locate, unified_diff

OK = (PASSED, "XFAIL")
# Bundled libraries are pure Python: /testbed goes on sys.path through a .pth file instead of an install step.
PTH_LINE = (
    'echo /testbed > "$(python -c \'import sysconfig; print(sysconfig.get_paths()["purelib"])\')/testbed.pth"'
)


@dataclass(frozen=True)
class Library:
    """A PyPI library pinned by version (sha256 of its sdist), with its test files and its split."""

    name: str
    version: str
    repo: str
    test_files: tuple[str, ...]
    sha256: str = ""
    split: str = "train"
    python: str = "3.11"
    pip_packages: tuple[str, ...] = ("pytest",)

    @property
    def key(self) -> str:
        return self.repo.replace("/", "__")

    def env(self) -> dict:
        return {"python": self.python, "pip_packages": list(self.pip_packages), "test_cmd": "pytest -rA",
                "test_files": list(self.test_files), "install": "", "env_setup": [PTH_LINE]}  # fmt: skip


@dataclass(frozen=True)
class TaskRecipe:
    """One bundled task: which mutation of which library (no source, no diff)."""

    id: str
    library: str
    file: str
    qualname: str
    operator: str
    occurrence: int
    seed: int
    FAIL_TO_PASS: tuple[str, ...] = field(default_factory=tuple)


class TestRunner(Protocol):
    """Runs the library's tests with ``patch`` applied to the clean tree (reverted afterwards)."""

    def run(self, patch: str) -> tuple[dict[str, str], str]: ...


@dataclass
class LocalRunner:
    """Host runner: a scratch copy of the clean tree, ``python -m pytest`` with our report plugin.

    A run past ``timeout`` (a mutation that loops forever) reports no test, which no mutation check keeps; the clean
    run (``patch`` empty) lowers the limit to 30 s plus five times its own time, so such a mutation costs a few
    clean runs, not 300 s."""

    tree: Path
    test_files: tuple[str, ...]
    timeout: float = 300

    def run(self, patch: str) -> tuple[dict[str, str], str]:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp) / "w"
            shutil.copytree(self.tree, work, ignore=shutil.ignore_patterns(".git"))
            if patch:
                proc = subprocess.run(
                    ["git", "apply", "-"], cwd=work, input=patch, text=True, capture_output=True
                )
                if proc.returncode != 0:
                    raise TaskError(f"mutation patch does not apply: {proc.stderr}")
            module = f"swe_srl_report_{uuid.uuid4().hex[:8]}"
            (Path(tmp) / f"{module}.py").write_text(PYTEST_REPORT_PLUGIN)
            report = Path(tmp) / "report.jsonl"
            env = {
                **os.environ,
                "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
                "PYTHONPATH": f"{tmp}:{work}",
                "SWE_SRL_REPORT": str(report),
            }
            cmd = [
                sys.executable,
                "-m",
                "pytest",
                "-rA",
                "-p",
                module,
                "-p",
                "no:cacheprovider",
                *self.test_files,
            ]
            started = time.monotonic()
            try:
                proc = subprocess.run(
                    cmd, cwd=work, env=env, capture_output=True, text=True, timeout=self.timeout
                )
            except subprocess.TimeoutExpired:
                return {}, f"{' '.join(self.test_files)}: no result within {self.timeout:.0f} s"
            if not patch:
                self.timeout = min(self.timeout, 30 + 5 * (time.monotonic() - started))
            tests = parse_report(report.read_text()) if report.exists() else {}
            return tests, proc.stdout + proc.stderr


REVERT = (
    "cd /testbed && git checkout -q -- . && git clean -fdq"
    " && find . -name __pycache__ -type d -prune -exec rm -rf {} +"
)
"""Back to the clean commit, bytecode included: sdists' ``.gitignore`` often hides ``*.pyc`` from ``git clean``, and
a mutation of the same size applied within the same second as the previous one would run the previous one's stale
bytecode (Python checks a source's size and whole-second mtime), as ``tabulate__tabulate-m007`` after ``m006`` did."""


@dataclass
class SandboxRunner:
    """Container runner: a sandbox started from the clean library's instance image; reverts with git."""

    sandbox: object
    instance: object

    def run(self, patch: str) -> tuple[dict[str, str], str]:

        if patch:
            result = self.sandbox.apply_patch(patch)  # type: ignore[attr-defined]
            if result.exit_code != 0:
                raise TaskError(f"mutation patch does not apply: {result.output[-300:]}")
        try:
            # node ids only: with the grader's space-cut aliases a test `t[a b]` would count twice (as `t[a` too)
            run = run_tests_logged(self.sandbox, self.instance, timeout=300, aliases=False)  # type: ignore[arg-type]
        finally:
            self.sandbox.run(REVERT)  # type: ignore[attr-defined]
        return run.tests, run.log


def check_mutation(clean: dict[str, str], mutated: dict[str, str]) -> tuple[list[str], list[str]] | None:
    """(FAIL_TO_PASS, PASS_TO_PASS) when the mutation breaks some clean-passing tests and no other; else None."""
    passing = sorted(t for t, s in clean.items() if s in OK)
    broken = [t for t in passing if mutated.get(t) not in OK]
    if not broken or len(broken) == len(passing):
        return None
    return broken, [t for t in passing if t not in broken]


def mutate(tree: Path, recipe: TaskRecipe) -> tuple[str, str]:
    """(mutated source of ``recipe.file``, the fix diff turning mutated back into the original)."""
    source = (tree / recipe.file).read_text(encoding="utf-8")
    site = locate(source, recipe.qualname, recipe.operator, recipe.occurrence, f"{recipe.file}")
    mutated = apply_site(source, site)
    return mutated, unified_diff(recipe.file, mutated, source)


def build_instance(lib: Library, tree: Path, recipe: TaskRecipe, repo_dir: Path, f2p: list[str],
                   p2p: list[str], log: str) -> dict:  # fmt: skip
    """Write the mutated repo (one commit) to ``repo_dir`` and return the SWE-bench record."""
    mutated, gold = mutate(tree, recipe)
    shutil.rmtree(repo_dir, ignore_errors=True)
    shutil.copytree(tree, repo_dir, ignore=shutil.ignore_patterns(".git"))
    (repo_dir / recipe.file).write_text(mutated, encoding="utf-8")
    commit = git_snapshot(repo_dir, f"{lib.name} {lib.version}")
    return {
        "instance_id": recipe.id, "repo": lib.repo, "base_commit": commit, "patch": gold, "test_patch": "",
        "problem_statement": problem_statement(lib.name, f2p, log, seed=recipe.seed),
        "hints_text": "", "version": lib.version, "environment_setup_commit": commit,
        "FAIL_TO_PASS": f2p, "PASS_TO_PASS": p2p, "env": lib.env(), "repo_dir": str(repo_dir),
        "mutation": {k: v for k, v in asdict(recipe).items() if k != "FAIL_TO_PASS"},
    }  # fmt: skip


def candidate_recipes(lib: Library, tree: Path, files: list[str], *, count: int, seed: int,
                      operators: tuple[str, ...] | None = None) -> list[TaskRecipe]:  # fmt: skip
    """``count`` random mutation sites (deterministic in ``seed``) over ``files``, spread over operators."""
    rng = random.Random(seed)
    pool = []
    for path in files:
        for site in find_sites((tree / path).read_text(encoding="utf-8"), path):
            if operators is None or site.operator in operators:
                pool.append((path, site))
    by_op: dict[str, list] = {}
    for item in pool:
        by_op.setdefault(item[1].operator, []).append(item)
    picks = []
    while len(picks) < count and any(by_op.values()):
        for op in sorted(by_op):
            if by_op[op] and len(picks) < count:
                picks.append(by_op[op].pop(rng.randrange(len(by_op[op]))))
    return [
        TaskRecipe(
            f"{lib.name}__{lib.name}-s{seed}-{n:03d}",
            lib.name,
            path,
            s.qualname,
            s.operator,
            s.occurrence,
            seed,
        )
        for n, (path, s) in enumerate(picks)
    ]


def synthesize(lib: Library, tree: Path, runner: TestRunner, candidates: list[TaskRecipe],
               out_dir: Path, progress=None) -> list[dict]:  # fmt: skip
    """Run the clean tests, then each candidate; keep valid mutations as SWE-bench records (repos in out_dir)."""
    clean, log = runner.run("")
    if not any(s in OK for s in clean.values()):
        raise TaskError(
            f"{lib.name}=={lib.version}: no test passes on the clean tree; log tail:\n{log[-1500:]}"
        )
    records = []
    for recipe in candidates:
        mutated_src, gold = mutate(tree, recipe)
        forward = unified_diff(recipe.file, (tree / recipe.file).read_text(encoding="utf-8"), mutated_src)
        tests, log = runner.run(forward)
        split = check_mutation(clean, tests)
        if split and (not recipe.FAIL_TO_PASS or sorted(recipe.FAIL_TO_PASS) == split[0]):
            records.append(build_instance(lib, tree, recipe, out_dir / recipe.id, split[0], split[1], log))
        if progress:
            progress(recipe, split is not None)
    return records


_TITLES = ("{lib}: {n} test(s) fail with a wrong result", "Regression in {lib}: {first} fails",
           "Unexpected behaviour in {lib} ({first})")  # fmt: skip


def problem_statement(library: str, failing: list[str], log: str, *, seed: int = 0) -> str:
    """A user-style bug report from the failing behaviour: test names and their error messages, no fix location."""
    messages = dict(re.findall(r"(?m)^(?:FAILED|ERROR) (\S+) - (.+)$", log))
    rng = random.Random(seed)
    first = failing[0].split("::")[-1]
    lines = [rng.choice(_TITLES).format(lib=library, n=len(failing), first=first), ""]
    lines.append(f"Running the {library} test suite, {len(failing)} test(s) that should pass now fail:")
    lines += ["", "```"]
    for test in failing[:5]:
        lines.append(f"{test}: {messages.get(test, 'fails').strip()[:300]}")
    if len(failing) > 5:
        lines.append(f"... and {len(failing) - 5} more")
    lines += ["```", "", f"Expected: these tests pass; the behaviour they check is what {library} documents."]
    return "\n".join(lines) + "\n"
