"""The grading sandbox's CPUs from the spec (``nano_cpus``, as SWE-bench's harness passes it to docker)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.specs import spec_cpus
from swe_srl.infra.sandbox.base import Limits
from swe_srl.infra.sandbox.factory import GRADING_GRACE_S, PROFILES, grading_limits, sandbox_spec

SPECS = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "swebench-specs-py.json"


def _instance(env: dict | None) -> Instance:
    return Instance(
        instance_id="x__y-1", repo="x/y", base_commit="abc", problem_statement="p", patch="", test_patch="",
        extra={"env": env} if env is not None else {},
    )  # fmt: skip


def test_spec_cpus_reads_nano_cpus() -> None:
    assert spec_cpus(_instance({"test_cmd": "pytest", "nano_cpus": 2_000_000_000})) == 2.0
    assert spec_cpus(_instance({"test_cmd": "pytest"})) is None
    assert spec_cpus(_instance({"test_cmd": "pytest", "nano_cpus": 1_500_000_000})) == 1.5


def test_no_spec_means_no_cpu_count(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    dump = tmp_path / "specs.json"
    dump.write_text(json.dumps({"MAP_REPO_VERSION_TO_SPECS_PY": {}}))
    monkeypatch.setenv("SWE_SRL_SWEBENCH_SPECS", str(dump))
    from swe_srl.benchmark.specs import swebench_table

    swebench_table.cache_clear()
    try:
        assert spec_cpus(_instance(None)) is None  # repo x/y has no spec: the default, no error
    finally:
        swebench_table.cache_clear()


@pytest.mark.parametrize(
    ("spec", "host", "cpus"), [(2.0, 16, 2.0), (2.0, 2, 2.0), (2.0, 1, 1.0), (4.0, 3, 3.0), (None, 16, None)]
)
def test_grading_limits_cap_the_spec_at_the_host(spec: float | None, host: int, cpus: float | None) -> None:
    limits = grading_limits(1800.0, spec, host)
    assert limits["command_timeout_s"] == 1800.0 and limits["episode_timeout_s"] == 1800.0 + GRADING_GRACE_S
    assert limits.get("cpus") == cpus
    chosen = sandbox_spec("img", profile="grading", limits=limits).limits
    assert chosen.cpus == (cpus or PROFILES["grading"].limits.cpus) and chosen.memory == "4g"
    assert PROFILES["grading"].limits.cpus == Limits().cpus == 1.0  # the default is unchanged


@pytest.mark.skipif(not SPECS.exists(), reason="no swebench spec dump in ../shared/data")
def test_pylint_specs_ask_for_two_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWE_SRL_SWEBENCH_SPECS", str(SPECS))
    from swe_srl.benchmark.specs import swebench_table

    swebench_table.cache_clear()
    try:
        pylint = Instance(
            instance_id="pylint-dev__pylint-6528", repo="pylint-dev/pylint", base_commit="abc",
            problem_statement="p", patch="", test_patch="", version="2.15",
        )  # fmt: skip
        assert spec_cpus(pylint) == 2.0
        assert grading_limits(1800.0, spec_cpus(pylint), os.cpu_count() or 1)["cpus"] == min(
            2.0, os.cpu_count() or 1
        )
    finally:
        swebench_table.cache_clear()
