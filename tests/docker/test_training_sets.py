"""SWE-smith and SWE-Gym records run through the same paths as every instance: a SWE-smith record (its repo a local
mirror with the bug on a branch named by the instance id, as SWE-smith's mirrors are) and a SWE-Gym record load
from JSONL, build offline from their ``env`` spec, and grade for real (gold resolves, empty does not); the SWE-smith
instance also runs a graded SWEEnv episode (RLVR's), an effect-layer evaluation and a trajectory replay, and
``published_setup`` turns the clean commit into the branch's tree."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from swe_srl.agent.loop import AgentConfig, run_episode
from swe_srl.agent.policies import ScriptedPolicy, gold_patch_outputs
from swe_srl.benchmark.instances import Instance, load_instances
from swe_srl.benchmark.published import published_setup
from swe_srl.benchmark.training_sets import SWE_GYM, SWE_SMITH
from swe_srl.core.actions import parse_output
from swe_srl.env.swe_env import SWEEnv
from swe_srl.grading.runner import grade
from swe_srl.trajectories.schema import Step, Trajectory

pytestmark = pytest.mark.docker
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e",
           "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z"}  # fmt: skip
ENV = {"python": "3.11", "pip_packages": ["pytest"], "test_cmd": "pytest -rA", "install": ""}
SMITH_ID = "tinyorg__calc.0123abcd.func_pm_op_change__k3j4l5m6"
CALC = "def add(a, b):\n    return a + b\n\n\ndef neg(a):\n    return -a\n"
TESTS = {
    "tests/test_calc.py": "from calc import add, neg\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_neg():\n    assert neg(2) == -2\n",
    "tests/test_other.py": "def test_other():\n    assert True\n",
    "tests/__init__.py": "",  # pytest then puts /testbed on sys.path
}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    ).stdout


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``swesmith/tinyorg__calc.0123abcd``: ``main`` clean, branch ``SMITH_ID`` = main + the bug, committed."""
    repo = tmp_path_factory.mktemp("swesmith") / "tinyorg__calc.0123abcd"
    git(repo.parent, "init", "-q", "-b", "main", str(repo))
    (repo / "tests").mkdir()
    (repo / "calc.py").write_text(CALC)
    for path, text in TESTS.items():
        (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Initial commit")
    git(repo, "checkout", "-q", "-b", SMITH_ID)
    (repo / "calc.py").write_text(CALC.replace("a + b", "a - b"))
    git(repo, "commit", "-qam", "Bug Patch")
    git(repo, "checkout", "-q", "main")
    return repo


@pytest.fixture(scope="module")
def smith(docker_engine, mirror: Path, tmp_path_factory: pytest.TempPathFactory) -> Instance:
    """The SWE-smith record, as the dataset has it (bug patch, no base_commit, no test_patch) + env and repo_dir."""
    record = {
        "instance_id": SMITH_ID, "repo": "swesmith/tinyorg__calc.0123abcd", "patch": git(mirror, "diff", "main", SMITH_ID),
        "FAIL_TO_PASS": ["tests/test_calc.py::test_add"],
        "PASS_TO_PASS": ["tests/test_calc.py::test_neg", "tests/test_other.py::test_other"],
        "created_at": "2025-04-01T00:00:00", "image_name": "jyangballin/swesmith.x86_64.tinyorg_1776_calc.0123abcd",
        "problem_statement": "add(2, 3) returns -1 instead of 5.", "env": ENV, "repo_dir": str(mirror),
    }  # fmt: skip
    path = tmp_path_factory.mktemp("smith-tasks") / "swe-smith.jsonl"
    path.write_text(json.dumps(record) + "\n")
    (instance,) = load_instances(str(path))
    assert (
        instance.extra["source"] == SWE_SMITH
        and instance.base_commit == git(mirror, "rev-parse", SMITH_ID).strip()
    )
    return instance


def test_swe_smith_gold_resolves_and_empty_does_not(smith: Instance) -> None:
    gold = grade(smith, smith.patch)  # the bug patch reversed
    assert gold.status == "resolved", gold.log[-2000:]
    assert gold.tests["tests/test_calc.py::test_add"] == "PASSED"
    assert "tests/test_other.py::test_other" not in gold.tests  # SWE-smith runs the FAIL_TO_PASS files only
    empty = grade(smith, "")
    assert empty.status == "unresolved" and empty.tests["tests/test_calc.py::test_add"] == "FAILED"


def test_swe_smith_episode_effect_and_replay(smith: Instance, tmp_path: Path) -> None:
    from swe_srl.eval.replay import replay
    from swe_srl.rewards.effect.evaluator import SandboxEffect

    # RLVR's episode: SWEEnv on the instance, the gold fix submitted, graded by the outcome reward
    env = SWEEnv(instances=[smith], reward_mode="outcome")
    try:
        policy = ScriptedPolicy(gold_patch_outputs(smith.patch))
        episode = run_episode(env, policy, config=AgentConfig(submit_to_env=True), seed=0)
    finally:
        env.close()
    assert episode.steps[-1].info["grade_status"] == "resolved" and episode.total_reward == 1.0
    steps = [
        Step(thought=o.thought, action=o.action) for o in map(parse_output, gold_patch_outputs(smith.patch))
    ]
    traj = Trajectory(instance_id=smith.instance_id, problem=smith.problem_statement, steps=steps)
    rows = replay(traj, smith)
    assert rows[1].exit_code == 0, rows[1].observation  # the gold patch applies on the branch's tree
    apply = 1
    with SandboxEffect("full", root=tmp_path / "fx", expert_root=tmp_path / "ex") as effect:
        assert effect.evaluate(smith, traj, apply, traj.steps[apply].action).value == 1.0
        assert effect.evaluate(smith, traj, apply, "ls").value == 0.0


def test_published_setup_turns_the_clean_commit_into_the_branch(smith: Instance, mirror: Path) -> None:
    # a SWE-smith image holds the mirror's clean commit; the setup puts the task's tree there without fetching
    from swe_srl.infra.images import InstanceRecipe, ensure_env_image, ensure_instance_image
    from swe_srl.infra.recipes import instance_recipes
    from swe_srl.infra.sandbox.factory import open_sandbox

    env, recipe = instance_recipes(smith)
    ensure_env_image(env)
    clean = InstanceRecipe(name="swesmith-clean", env_image=recipe.env_image, repo_dir=mirror,
                           base_commit=git(mirror, "rev-parse", "main").strip())  # fmt: skip
    with open_sandbox(ensure_instance_image(clean), profile="shell") as sandbox:
        for command in published_setup(smith):
            result = sandbox.run(command)
            assert result.exit_code == 0, result.output
        tree = sandbox.run(
            "cd /testbed && git rev-parse 'HEAD^{tree}' && git status --porcelain"
        ).output.split()
    assert tree == [
        git(mirror, "rev-parse", f"{SMITH_ID}^{{tree}}").strip()
    ]  # the branch's tree, nothing left over


def test_swe_gym_gold_resolves_and_empty_does_not(docker_engine, tmp_path: Path) -> None:
    repo = tmp_path / "calc"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    (repo / "calc.py").write_text(CALC.replace("a + b", "a - b"))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "calc.py").write_text(CALC)
    patch = git(repo, "diff")
    git(repo, "checkout", "-q", "--", "calc.py")
    test = "test_calc.py"
    test_patch = (f"diff --git a/{test} b/{test}\nnew file mode 100644\n--- /dev/null\n+++ b/{test}\n"
                  f"@@ -0,0 +1,9 @@\n" + "".join("+" + ln + "\n" for ln in TESTS["tests/test_calc.py"].splitlines()))  # fmt: skip
    record = {
        "instance_id": "tinyorg__calc-7", "repo": "tinyorg/calc", "base_commit": base, "patch": patch,
        "test_patch": test_patch, "problem_statement": "add(2, 3) returns -1", "hints_text": "", "version": "1.0",
        "created_at": "2024-01-01T00:00:00Z", "FAIL_TO_PASS": [f"{test}::test_add"], "PASS_TO_PASS": [f"{test}::test_neg"],
        "env": {**ENV, "test_files": [test]}, "repo_dir": str(repo),
    }  # fmt: skip
    path = tmp_path / "swe-gym.jsonl"
    path.write_text(json.dumps(record) + "\n")
    (instance,) = load_instances(f"swe-gym:{path}")
    assert instance.extra["source"] == SWE_GYM and instance.extra["image_name"].startswith("xingyaoww/")
    gold = grade(instance, instance.patch)
    assert gold.status == "resolved", gold.log[-2000:]
    assert grade(instance, "").status == "unresolved"
