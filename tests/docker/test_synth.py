"""Synthesis on a real PyPI library (parse 1.20.2) in a container: kept tasks are valid SWE-bench records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swe_srl import paths
from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.repos import extract_sdist, fetch_sdist, git_snapshot
from swe_srl.errors import TaskError
from swe_srl.grading.runner import grade
from swe_srl.infra.sandbox.factory import open_sandbox
from swe_srl.synth.bundled import BUNDLED_RECIPES, _library, _validate_library
from swe_srl.synth.synthesis import Library, SandboxRunner, TaskRecipe, candidate_recipes, synthesize

pytestmark = pytest.mark.docker
LIB = Library("parse", "1.20.2", "r1chardj0n3s/parse", ("tests",))


def _bundled(name: str, ids: list[str], tmp_path: Path) -> tuple[dict, Library, Path, list[TaskRecipe]]:
    """The bundled suite's entry for library ``name``, its Library, its extracted sdist and the recipes ``ids``."""
    suite = json.loads((paths.resource_dir("tasks") / BUNDLED_RECIPES).read_text(encoding="utf-8"))
    entry = next(e for e in suite["libraries"] if e["library"]["name"] == name)
    tasks = {t["id"]: t for t in entry["tasks"]}
    recipes = [TaskRecipe(**{**tasks[i], "FAIL_TO_PASS": tuple(tasks[i]["FAIL_TO_PASS"])}) for i in ids]
    lib = _library(entry["library"])
    try:
        tree = extract_sdist(fetch_sdist(lib.name, lib.version, lib.sha256 or None), tmp_path / "src")
    except TaskError as exc:
        pytest.skip(f"PyPI unreachable: {exc}")
    return entry, lib, tree, recipes


def test_synthesize_parse(docker_engine, tmp_path: Path) -> None:
    try:
        tree = extract_sdist(fetch_sdist(LIB.name, LIB.version), tmp_path / "src")
    except TaskError as exc:
        pytest.skip(f"PyPI unreachable: {exc}")
    commit = git_snapshot(tree, "clean")
    clean = Instance("parse-clean", LIB.repo, commit, "", "", "", version=LIB.version,
                     extra={"env": LIB.env(), "repo_dir": str(tree)})  # fmt: skip
    candidates = candidate_recipes(LIB, tree, ["parse.py"], count=4, seed=3)
    assert candidates == candidate_recipes(LIB, tree, ["parse.py"], count=4, seed=3)  # deterministic
    with open_sandbox(clean, profile="validation") as sandbox:
        records = synthesize(LIB, tree, SandboxRunner(sandbox, clean), candidates, tmp_path / "repos")
    assert records, "no mutation of parse.py was caught by its tests"
    inst = Instance.from_record(records[0])
    assert inst.FAIL_TO_PASS and inst.PASS_TO_PASS and not set(inst.FAIL_TO_PASS) & set(inst.PASS_TO_PASS)
    assert inst.oracle_files == ["parse.py"]
    fixed = next(
        ln[1:].strip() for ln in inst.patch.splitlines() if ln.startswith("+") and not ln.startswith("+++")
    )
    assert fixed not in inst.problem_statement and "@@" not in inst.problem_statement  # no fix location/code
    assert grade(inst, inst.patch).status == "resolved"


def test_validation_keeps_a_task_whose_test_ids_hold_spaces(docker_engine, tmp_path: Path) -> None:
    """``inflection__inflection-m001`` breaks ``test_humanize[employee_salary-Employee salary]`` and two more. The
    grader also answers for SWE-bench's space-cut ids (``…-Employee``); synthesis counted those as tests, found six
    broken instead of the recipe's three and dropped the task at every ``swe-srl tasks build``."""
    entry, lib, tree, (recipe,) = _bundled("inflection", ["inflection__inflection-m001"], tmp_path)
    assert any(" " in t for t in recipe.FAIL_TO_PASS)
    kept = _validate_library(lib, tree, [recipe])
    assert list(kept) == [recipe.id]
    assert set(kept[recipe.id][1]) <= set(entry["clean_passing"])  # node ids, no space-cut alias among them


def test_validation_reverts_bytecode_between_mutations(docker_engine, tmp_path: Path) -> None:
    """``tabulate__tabulate-m006`` and ``m007`` flip comparisons in the same file (same size). tabulate's
    ``.gitignore`` hides ``*.pyc`` from ``git clean``, so when ``m007`` was applied within the same second as
    ``m006``'s run, its tests ran ``m006``'s stale bytecode and a fresh ``swe-srl tasks build`` dropped ``m007`` (and
    its 6 test-split samples) now and then. The revert leaves no bytecode behind; both tasks reproduce."""
    ids = ["tabulate__tabulate-m006", "tabulate__tabulate-m007"]
    _, lib, tree, recipes = _bundled("tabulate", ids, tmp_path)
    assert recipes[0].file == recipes[1].file
    assert "*.pyc" in (tree / ".gitignore").read_text(encoding="utf-8")
    clean = Instance(f"{lib.key}-clean", lib.repo, git_snapshot(tree, "clean"), "", "", "",
                     version=lib.version, extra={"env": lib.env(), "repo_dir": str(tree)})  # fmt: skip
    with open_sandbox(clean, profile="validation") as sandbox:
        runner = SandboxRunner(sandbox, clean)
        runner.run("")
        left = sandbox.run("find /testbed -name '*.pyc' | head -3").output.strip()
    assert left == "", f"bytecode outlived the revert: {left}"  # the deterministic part
    kept = _validate_library(lib, tree, recipes)  # m006, then m007 at once
    assert sorted(kept) == ids
