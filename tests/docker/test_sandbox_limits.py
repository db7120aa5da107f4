"""Limits enforced or refused, on the engine in use (Docker; root Podman in scripts/test_podman.sh): the engine says
it enforces memory and pids, a started sandbox's cgroup holds its limits, and a cgroup that does not hold them is
refused. The refusal of an engine that cannot enforce them (rootless Podman on cgroup v1) is checked end to end by
scripts/test_podman.sh; its pure parts by tests/unit/test_engines.py."""

from __future__ import annotations

import pytest

from swe_srl.errors import LimitsUnenforced
from swe_srl.infra.engine import engine_name
from swe_srl.infra.sandbox.base import Limits, SandboxSpec
from swe_srl.infra.sandbox.docker import DockerSandbox
from swe_srl.infra.sandbox.enforcement import check_inside, engine_facts

pytestmark = pytest.mark.docker


def test_engine_in_use_enforces_memory_and_pids(docker_engine) -> None:
    facts = engine_facts()
    assert facts.engine == engine_name()
    assert facts.missing() == [], facts.refusal()


def test_sandbox_cgroup_holds_its_limits_and_a_mismatch_is_refused(tiny_image: str, docker_engine) -> None:
    limits = Limits(memory="512m", pids=100)
    with DockerSandbox(SandboxSpec(image=tiny_image, limits=limits)) as box:  # start() already checked them
        check_inside(box, limits)
        assert "100" in box.run("cat /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids/pids.max 2>/dev/null").output
        with pytest.raises(LimitsUnenforced, match=r"memory limit 536870912 instead of 1073741824"):
            check_inside(box, Limits(memory="1g", pids=100))  # what an engine that dropped 1g would look like
        with pytest.raises(LimitsUnenforced, match=r"pids limit 100 instead of 64"):
            check_inside(box, Limits(memory="512m", pids=64))
