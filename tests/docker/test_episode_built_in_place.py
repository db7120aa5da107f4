"""Episodes on a repo built in place: ``--policy gold`` through an episode resolves, ``--policy empty`` is graded.

A bundled task whose image, like astropy's, scikit-learn's or matplotlib's, holds a compiled extension over
``Limits.patch_file_bytes`` that the repo's ``.gitignore`` ignores. Its patch must be extracted without an infra
error, and the ignored file must not be in it.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

import pytest

from swe_srl.benchmark.instances import Instance
from swe_srl.eval.run import eval_instance
from swe_srl.eval.settings import EvalSettings

pytestmark = pytest.mark.docker

TASK = "inflection__inflection-m011"
EXTENSION = "_speedups.cpython-311-x86_64-linux-gnu.so"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z"}  # fmt: skip


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


@pytest.fixture(scope="module")
def built_task(docker_engine, tmp_path_factory: pytest.TempPathFactory) -> Instance:
    """The bundled task on a commit that ignores ``*.so``, its install step writing a 2 MiB extension."""
    from swe_srl.benchmark.instances import load_instances

    task = next(i for i in load_instances("bundled") if i.instance_id == TASK)
    repo = tmp_path_factory.mktemp("built") / "repo"
    subprocess.run(["git", "clone", "-q", task.extra["repo_dir"], str(repo)], check=True)
    _git(repo, "checkout", "-q", task.base_commit)
    (repo / ".gitignore").write_text("*.so\nbuild/\n")
    _git(repo, "add", ".gitignore")
    _git(repo, "commit", "-q", "-m", "ignore build outputs")
    env = dict(task.extra["env"])
    env["install"] = (
        f"python -c \"import os; open('{EXTENSION}', 'wb').write(os.urandom(2 << 20))\"\n"
        + env.get("install", "")
    ).strip()
    extra = task.extra | {"repo_dir": str(repo), "env": env}
    return dataclasses.replace(
        task, instance_id=f"{TASK}-built", base_commit=_git(repo, "rev-parse", "HEAD"), extra=extra
    )


@pytest.mark.parametrize(("policy", "status"), [("gold", "resolved"), ("empty", "unresolved")])
def test_episode_on_a_repo_with_an_ignored_extension_over_the_cap(
    built_task: Instance, policy: str, status: str
) -> None:
    record = eval_instance(built_task, EvalSettings(policy, max_steps=5))
    assert record["exit_reason"] == "submitted", record.get("error")
    assert record["status"] == status, (record.get("error"), record.get("log", "")[-1500:])
    assert EXTENSION not in record["model_patch"] and not record["patch_left_out"]
    gold_files = [line for line in built_task.patch.splitlines() if line.startswith("diff --git")]
    assert [line for line in record["model_patch"].splitlines() if line.startswith("diff --git")] == (
        gold_files if policy == "gold" else []
    )
