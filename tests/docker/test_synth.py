"""Synthesis on a real PyPI library (parse 1.20.2) in a container: kept tasks are valid SWE-bench records."""

from __future__ import annotations

from pathlib import Path

import pytest

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.repos import extract_sdist, fetch_sdist, git_snapshot
from swe_srl.errors import TaskError
from swe_srl.grading.runner import grade
from swe_srl.infra.sandbox.factory import open_sandbox
from swe_srl.synth.synthesis import Library, SandboxRunner, candidate_recipes, synthesize

pytestmark = pytest.mark.docker
LIB = Library("parse", "1.20.2", "r1chardj0n3s/parse", ("tests",))


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
