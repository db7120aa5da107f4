"""sympy's ``bin/test`` graded through our reporter on a real Verified instance (sympy__sympy-23950): gold resolves,
the empty patch does not, and patches that leave the bug in place and forge the runner's output instead stay
unresolved.

Needs ``SWE_SRL_REPOS_DIR`` (a clone or mirror of sympy/sympy, see ``benchmark.repos.repo_source``) and the Verified
JSONL in the shared data folder; skips, naming what is missing, without them. The image builds in about a minute
once the sympy 1.12 env image exists.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_grading_attacks import make_patch

from swe_srl.benchmark.verdicts import TAMPERED

pytestmark = [pytest.mark.docker, pytest.mark.slow]

INSTANCE = "sympy__sympy-23950"
PACKAGE = "sympy/sets/contains.py"  # imported by `import sympy`, before the runner
SHARED = Path(os.environ.get("SWE_SRL_SHARED", Path(__file__).resolve().parents[2] / "../shared"))
DATASET = SHARED / "data" / "swebench-verified.jsonl"


@pytest.fixture(scope="module")
def sympy_task(docker_engine):
    """(instance, repos_dir, base text of the files the forgeries edit), or a skip naming what is missing."""
    from swe_srl.benchmark.instances import load_instances, select_instances
    from swe_srl.benchmark.repos import repo_source
    from swe_srl.errors import TaskError
    from swe_srl.infra.recipes import instance_image
    from swe_srl.infra.sandbox.factory import open_sandbox

    repos = os.environ.get("SWE_SRL_REPOS_DIR")
    if not repos:
        pytest.skip("set SWE_SRL_REPOS_DIR to a folder with a clone or mirror of sympy/sympy")
    if not DATASET.is_file():
        pytest.skip(f"no SWE-bench Verified JSONL at {DATASET} (set SWE_SRL_SHARED)")
    try:
        repo_source("sympy/sympy", Path(repos))
        (instance,) = select_instances(load_instances(str(DATASET)), [INSTANCE])
    except TaskError as exc:
        pytest.skip(str(exc))
    tag = instance_image(instance, repos_dir=Path(repos))
    with open_sandbox(tag, profile="grading", base_commit=instance.base_commit) as sandbox:
        base = {p: sandbox.read_file(p).decode() for p in (PACKAGE, "bin/test")}
    return instance, Path(repos), base


def forged_lines(instance) -> str:
    return "".join(f"{t} ok\n" for t in (*instance.FAIL_TO_PASS, *instance.PASS_TO_PASS))


def forgery(name: str, instance, base: dict[str, str]) -> dict[str, str]:
    lines = forged_lines(instance)
    if name == "printed ok lines":
        return {PACKAGE: base[PACKAGE] + f"\nprint({lines!r})\n"}
    if name == "printed ok lines, then exit 0":
        return {PACKAGE: base[PACKAGE] + f"\nimport sys\nprint({lines!r})\nsys.exit(0)\n"}
    if name == "reporter's failures turned into passes":
        hook = (  # in the method the failing test calls: the runner is loaded by then
            "def as_set(self):\n        import sympy.testing.runtests as _r\n"
            "        _r.PyTestReporter.test_exception = _r.PyTestReporter.test_pass\n"
            "        raise NotImplementedError()"
        )
        return {
            PACKAGE: base[PACKAGE].replace("def as_set(self):\n        raise NotImplementedError()", hook)
        }
    if name == "bin/test prints ok lines":  # the runner is a test file: the patch's edit is dropped
        return {"bin/test": base["bin/test"].replace("\nimport ", f"\nprint({lines!r})\nimport ", 1)}
    raise AssertionError(name)


FORGERIES = [
    "printed ok lines",
    "printed ok lines, then exit 0",
    "reporter's failures turned into passes",
    "bin/test prints ok lines",
]


def test_gold_resolves_and_empty_does_not(sympy_task) -> None:
    from swe_srl.grading.runner import grade

    instance, repos, _ = sympy_task
    gold = grade(instance, instance.patch, repos_dir=repos)
    assert gold.status == "resolved", gold.log[-2000:]
    assert gold.cross_check == [] and gold.flags == []
    empty = grade(instance, "", repos_dir=repos)
    assert empty.status == "unresolved", empty.log[-2000:]
    assert all(empty.tests.get(t) != "PASSED" for t in instance.FAIL_TO_PASS)
    assert all(empty.tests[t] == "PASSED" for t in instance.PASS_TO_PASS)


@pytest.mark.parametrize("name", FORGERIES)
def test_forgery_is_not_resolved(sympy_task, name: str) -> None:
    from swe_srl.grading.runner import grade

    instance, repos, base = sympy_task
    result = grade(instance, make_patch(base, forgery(name, instance, base)), repos_dir=repos)
    assert result.status == "unresolved", result.log[-2000:]
    assert all(result.tests.get(t) != "PASSED" for t in instance.FAIL_TO_PASS)
    if name == "printed ok lines, then exit 0":  # stdout alone says resolved; the record says they disagree
        assert "test_as_set: channel none, stdout PASSED" in result.cross_check, result.cross_check
    if name == "reporter's failures turned into passes":
        assert result.reason.startswith(TAMPERED), result.reason
    if name == "bin/test prints ok lines":
        assert result.reverted_test_files == ["bin/test"]
