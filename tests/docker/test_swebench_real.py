"""Real SWE-bench Verified instances offline, one per repository measured in docs/grading.md: gold resolves through
`swe-srl eval`, the empty patch does not.

Needs ``SWE_SRL_REPOS_DIR`` = a folder holding clones or bare mirrors of the repositories (``pytest-dev__pytest``,
``pytest``, ``pytest-dev+pytest``...; see ``swe_srl.benchmark.repos.repo_source``), the Verified JSONL in the shared data
folder and the swebench spec tables; the env image builds need PyPI once. Each instance skips, naming what is missing,
when its clone is absent (CI has none).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.slow]

INSTANCES = {
    "pytest-dev__pytest-7432": "pytest-dev/pytest",  # 5.4: builds in ≈ 30 s once the env image exists, tests ≈ 20 s
    "pytest-dev__pytest-5809": "pytest-dev/pytest",  # 4.6: its rewriting hook and pytest.ensuretemp are the runner's
    "sphinx-doc__sphinx-8595": "sphinx-doc/sphinx",  # tox --current-env inside the venv, docutils of its era
    "pydata__xarray-7229": "pydata/xarray",  # environment.yml through pip, the Python fallback (approximate Python)
    "pylint-dev__pylint-6903": "pylint-dev/pylint",  # era pip/setuptools: a working editable install
    "sympy__sympy-13031": "sympy/sympy",
}
SHARED = Path(os.environ.get("SWE_SRL_SHARED", Path(__file__).resolve().parents[2] / "../shared"))
DATASET = SHARED / "data" / "swebench-verified.jsonl"


@pytest.fixture(scope="module", params=sorted(INSTANCES))
def real_instance(request, docker_engine):
    """(instance, repos_dir), or a skip naming what is missing."""
    from swe_srl.benchmark.instances import load_instances, select_instances
    from swe_srl.benchmark.repos import repo_source
    from swe_srl.benchmark.specs import instance_spec
    from swe_srl.errors import TaskError

    instance_id, repo = request.param, INSTANCES[request.param]
    repos = os.environ.get("SWE_SRL_REPOS_DIR")
    if not repos:
        pytest.skip(f"set SWE_SRL_REPOS_DIR to a folder with a clone or mirror of {repo}")
    if not DATASET.is_file():
        pytest.skip(f"no SWE-bench Verified JSONL at {DATASET} (set SWE_SRL_SHARED)")
    try:
        repo_source(repo, Path(repos))
        (instance,) = select_instances(load_instances(str(DATASET)), [instance_id])
        instance_spec(instance)
    except TaskError as exc:
        pytest.skip(str(exc))
    return instance, Path(repos)


def test_gold_resolves_through_eval_and_empty_does_not(real_instance, tmp_path: Path) -> None:
    from swe_srl.grading.runner import grade

    instance, repos = real_instance
    instance_id = instance.instance_id
    cmd = [sys.executable, "-m", "swe_srl.cli", "eval", "--policy", "gold", "--dataset", str(DATASET),
           "--instances", instance_id, "--repos-dir", str(repos), "-o", str(tmp_path / "gold")]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((tmp_path / "gold" / "report.json").read_text())
    log = (tmp_path / "gold" / "logs" / f"{instance_id}.log").read_text()[-3000:]
    assert report["per_instance"] == {instance_id: "resolved"}, log
    result = json.loads((tmp_path / "gold" / "results" / f"{instance_id}.json").read_text())
    assert all(result["tests"][t] == "PASSED" for t in instance.FAIL_TO_PASS + instance.PASS_TO_PASS)

    empty = grade(instance, "", repos_dir=repos)  # same instance image, reused
    assert empty.status == "unresolved", empty.log[-3000:]
    assert all(empty.tests.get(t) != "PASSED" for t in instance.FAIL_TO_PASS)
    assert all(empty.tests[t] == "PASSED" for t in instance.PASS_TO_PASS)
