"""A spec's ``nano_cpus`` reaches the grading container: a test that passes only under a 2-CPU quota resolves."""

from __future__ import annotations

import copy

import pytest
from test_grading_references import new_file_diff

from swe_srl.benchmark.instances import load_instances
from swe_srl.grading.runner import grade
from swe_srl.infra.engine import engine_cpus

pytestmark = pytest.mark.docker

CPU_TEST = "test/test_cpu_quota.py"
QUOTA_TEST = [
    "import os",
    "",
    "def cpus():  # what docker's NanoCpus sets: the CFS quota over the period (cgroup v2, else v1)",
    "    if os.path.exists('/sys/fs/cgroup/cpu.max'):",
    "        quota, period = open('/sys/fs/cgroup/cpu.max').read().split()",
    "    else:",
    "        quota = open('/sys/fs/cgroup/cpu/cpu.cfs_quota_us').read()",
    "        period = open('/sys/fs/cgroup/cpu/cpu.cfs_period_us').read()",
    "    return int(quota) / int(period)",
    "",
    "def test_two_cpus():",
    "    assert cpus() == 2, cpus()",
]


def _task(nano_cpus: int | None):
    task = copy.deepcopy(load_instances("bundled:test")[0])  # same id, so the same image
    task.test_patch = new_file_diff(CPU_TEST, QUOTA_TEST)
    task.FAIL_TO_PASS, task.PASS_TO_PASS = [f"{CPU_TEST}::test_two_cpus"], []
    env = {k: v for k, v in task.extra["env"].items() if k != "nano_cpus"} | {"test_files": [CPU_TEST]}
    task.extra["env"] = env | ({"nano_cpus": nano_cpus} if nano_cpus else {})
    return task


def test_a_two_cpu_spec_grades_in_a_two_cpu_container(docker_engine) -> None:
    if engine_cpus() < 2:
        pytest.skip("the engine's host has one CPU: a 2-CPU spec is capped at 1")
    result = grade(_task(2_000_000_000), "")
    assert result.status == "resolved" and result.image["cpus"] == 2.0, result.log[-1500:]
    default = grade(_task(None), "")  # no nano_cpus: the profile's one CPU, as before
    assert default.status == "unresolved" and default.image["cpus"] == 1.0, default.log[-1500:]
    assert "assert 1.0 == 2" in default.log
