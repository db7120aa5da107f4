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
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol

from swe_srl.errors import TaskError
from swe_srl.logparse import PASSED, PYTEST_REPORT_PLUGIN, parse_report
from swe_srl.mutations import apply_site, find_sites, locate, unified_diff
from swe_srl.repos import git_snapshot

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
    """Host runner: a scratch copy of the clean tree, ``python -m pytest`` with our report plugin."""

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
            proc = subprocess.run(
                cmd, cwd=work, env=env, capture_output=True, text=True, timeout=self.timeout
            )
            tests = parse_report(report.read_text()) if report.exists() else {}
            return tests, proc.stdout + proc.stderr


@dataclass
class SandboxRunner:
    """Container runner: a sandbox started from the clean library's instance image; reverts with git."""

    sandbox: object
    instance: object

    def run(self, patch: str) -> tuple[dict[str, str], str]:
        from swe_srl.grading import run_tests_logged

        if patch:
            result = self.sandbox.apply_patch(patch)  # type: ignore[attr-defined]
            if result.exit_code != 0:
                raise TaskError(f"mutation patch does not apply: {result.output[-300:]}")
        try:
            tests, log, _ = run_tests_logged(self.sandbox, self.instance, timeout=300)  # type: ignore[arg-type]
        finally:
            self.sandbox.run("cd /testbed && git checkout -q -- . && git clean -fdq")  # type: ignore[attr-defined]
        return tests, log


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


# --------------------------------------------------------------------------------------------------- bundled suite

BUNDLED_RECIPES = "bundled.json"


def _library(entry: dict) -> Library:
    fields = {
        k: tuple(v) if isinstance(v, list) else v
        for k, v in entry.items()
        if k in Library.__dataclass_fields__
    }
    return Library(**fields)


def _validate_library(lib: Library, tree: Path, recipes: list[TaskRecipe]) -> dict[str, tuple[str, list[str]]]:
    """Re-run every mutation of ``lib`` in one container: ``{id: (log, PASS_TO_PASS)}`` of those reproducing."""
    from swe_srl.grading import instance_image
    from swe_srl.sandbox.base import SandboxSpec
    from swe_srl.sandbox.docker import DockerSandbox
    from swe_srl.tasks import Instance

    commit = git_snapshot(tree, f"{lib.name} {lib.version} (clean)")
    clean = Instance(f"{lib.key}-clean", lib.repo, commit, "", "", "", version=lib.version,
                     extra={"env": lib.env(), "repo_dir": str(tree)})  # fmt: skip
    ok: dict[str, tuple[str, list[str]]] = {}
    with DockerSandbox(SandboxSpec(image=instance_image(clean), base_commit=commit)) as sandbox:
        runner = SandboxRunner(sandbox, clean)
        base, _ = runner.run("")
        for recipe in recipes:
            mutated, _ = mutate(tree, recipe)
            tests, log = runner.run(unified_diff(recipe.file, (tree / recipe.file).read_text(), mutated))
            split = check_mutation(base, tests)
            if split and split[0] == sorted(recipe.FAIL_TO_PASS):
                ok[recipe.id] = (log, split[1])
    return ok


def _materialize(recipes_path: Path, root: Path, validate: bool, console) -> list[dict]:
    from swe_srl.repos import extract_sdist, fetch_sdist

    records = []
    for entry in __import__("json").loads(recipes_path.read_text())["libraries"]:
        lib = _library(entry["library"])
        tree = extract_sdist(fetch_sdist(lib.name, lib.version, lib.sha256 or None), root / "src" / lib.key)
        recipes = [TaskRecipe(**{**t, "FAIL_TO_PASS": tuple(t["FAIL_TO_PASS"])}) for t in entry["tasks"]]
        passing = list(entry["clean_passing"])
        keep = {r.id: ("", [t for t in passing if t not in r.FAIL_TO_PASS]) for r in recipes}
        if validate:
            console.print(f"validating {len(recipes)} {lib.name} tasks in a container...")
            keep = _validate_library(lib, tree, recipes)
            for dropped in sorted({r.id for r in recipes} - set(keep)):
                console.print(f"[yellow]warning:[/] {dropped} no longer reproduces its FAIL_TO_PASS; skipped")
        for recipe in recipes:
            if recipe.id in keep:
                log, p2p = keep[recipe.id]
                record = build_instance(lib, tree, recipe, root / "repos" / recipe.id, list(recipe.FAIL_TO_PASS), p2p, log)
                record.update(split=lib.split, suite="bundled", validated=validate)
                records.append(record)
        shutil.rmtree(tree / ".git", ignore_errors=True)
    return records


def materialize_bundled(*, validate: bool | None = None, force: bool = False) -> list:
    """The bundled suite's instances, materialized from ``tasks/bundled.json`` into the cache on first use.

    ``validate`` (default: when a Docker engine answers, unless ``SWE_SRL_BUNDLED_VALIDATE=0``) re-runs every
    mutation in a container and drops tasks whose FAIL_TO_PASS no longer reproduces.
    """
    import fcntl
    import hashlib
    import json

    from rich.console import Console

    from swe_srl import paths
    from swe_srl.tasks import load_jsonl

    recipes_path = paths.project_root() / "tasks" / BUNDLED_RECIPES
    if not recipes_path.is_file():
        raise TaskError(f"bundled recipes {recipes_path} are missing; reinstall swe-srl from a full checkout")
    digest = hashlib.sha256(recipes_path.read_bytes()).hexdigest()[:12]
    root = paths.cache_dir("tasks") / f"bundled-{digest}"
    out = root / "instances.jsonl"
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if force or not out.is_file():
            if validate is None:
                from swe_srl.engine import engine_answers

                validate = os.environ.get("SWE_SRL_BUNDLED_VALIDATE", "1") != "0" and engine_answers()
            console = Console(stderr=True)
            console.print(f"materializing the bundled suite into {root} (validate={validate})...")
            records = _materialize(recipes_path, root, validate, console)
            paths.atomic_write_text(out, "".join(json.dumps(r) + "\n" for r in records))
    return [_fix_split(i) for i in load_jsonl(out)]


def _fix_split(instance):
    instance.extra.setdefault("suite", "bundled")
    return instance
