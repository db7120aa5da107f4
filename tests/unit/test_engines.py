"""Pure parts of the engine choice: which engine answers, what it enforces, the refusal, the cgroup check, Podman's
configuration and image names. The real engines are exercised by tests/docker (on Docker, and on root Podman in
scripts/test.sh's Podman job)."""

from __future__ import annotations

import os
import socket

import pytest

from swe_srl.errors import ConfigError, LimitsUnenforced
from swe_srl.infra import engine, podman
from swe_srl.infra.image_transfer import short_name
from swe_srl.infra.sandbox import enforcement
from swe_srl.infra.sandbox.base import Limits
from swe_srl.infra.sandbox.enforcement import docker_facts, limits_mismatch, podman_facts
from swe_srl.infra.sandbox.janitor import orphan_reason

PODMAN_VERSION = {"Components": [{"Name": "Podman Engine", "Version": "4.3.1"}, {"Name": "Conmon"}]}
DOCKER_VERSION = {"Components": [{"Name": "Engine", "Version": "20.10.24"}, {"Name": "containerd"}]}
# /libpod/info as Debian's podman 4.3 answers on this machine (cgroup v1): as root, and as a user with subuids
ROOT_INFO = {"host": {"security": {"rootless": False}, "cgroupVersion": "v1",
                      "cgroupControllers": ["cpuset", "cpu", "cpuacct", "blkio", "memory", "devices", "pids"]}}  # fmt: skip
ROOTLESS_V1 = {"host": {"security": {"rootless": True}, "cgroupVersion": "v1", "cgroupControllers": []}}
ROOTLESS_V2_NO_PIDS = {"host": {"security": {"rootless": True}, "cgroupVersion": "v2",
                                "cgroupControllers": ["cpu", "memory"]}}  # fmt: skip


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (PODMAN_VERSION, "podman"),
        (DOCKER_VERSION, "docker"),
        ({}, "docker"),
    ],  # an old Docker has no Components
)
def test_engine_is_told_from_the_version(version: dict, expected: str) -> None:
    assert engine.engine_of(version) == expected


def test_engine_setting_rejects_unknown_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(engine.ENGINE_ENV, "lxc")
    with pytest.raises(ConfigError, match=r"SWE_SRL_ENGINE='lxc': choose one of docker, podman"):
        engine.chosen_engine()


@pytest.mark.parametrize(
    ("info", "missing"),
    [
        (ROOT_INFO, []),  # root Podman: every controller
        (ROOTLESS_V1, ["memory", "pids"]),  # rootless on cgroup v1: none, silently
        (ROOTLESS_V2_NO_PIDS, ["pids"]),  # v2 with memory delegated but not pids
    ],
)
def test_podman_facts_name_what_is_not_enforced(info: dict, missing: list[str]) -> None:
    assert podman_facts(info).missing() == missing


def test_refusal_names_cause_and_fix() -> None:
    line = podman_facts(ROOTLESS_V1).refusal()
    assert "\n" not in line
    assert line.startswith(
        "podman (rootless, cgroup v1) cannot enforce the sandboxes' memory and pids limits"
    )
    assert "cgroup v2" in line and "root Podman" in line and "--allow-unlimited-sandboxes" in line


@pytest.mark.parametrize(
    ("info", "missing"),
    [
        ({"MemoryLimit": True, "PidsLimit": True, "CgroupVersion": "1"}, []),  # this machine's Docker
        (
            {"MemoryLimit": False, "PidsLimit": False, "SecurityOptions": ["name=rootless"]},
            ["memory", "pids"],
        ),
    ],
)
def test_docker_facts(info: dict, missing: list[str]) -> None:
    assert docker_facts(info).missing() == missing


def test_refused_unless_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    facts = podman_facts(ROOTLESS_V1)
    monkeypatch.delenv(enforcement.ALLOW_ENV, raising=False)
    with pytest.raises(LimitsUnenforced, match="rootless, cgroup v1"):
        enforcement.require_enforced(facts)
    assert enforcement.unlimited_note(facts) is None
    monkeypatch.setenv(enforcement.ALLOW_ENV, "1")
    assert enforcement.require_enforced(facts) == ["memory", "pids"]
    assert enforcement.unlimited_note(facts) == (
        "unlimited sandboxes: memory and pids not enforced (SWE_SRL_ALLOW_UNLIMITED_SANDBOXES=1)"
    )


LIMITS = Limits(memory="512m", pids=100)


@pytest.mark.parametrize(
    ("memory", "pids", "wrong"),
    [
        ("536870912", "100", None),  # cgroup v1 values as set
        (str(512 << 20), "100", None),  # memory.max (v2) holds the same number
        ("9223372036854771712", "100", "memory limit 9223372036854771712"),  # v1's "no limit"
        ("536870912", "max", "pids limit max"),  # v2's "no limit"
        ("none", "none", "memory limit none"),  # cgroup not readable in the container
    ],
)
def test_limits_read_inside_must_hold(memory: str, pids: str, wrong: str | None) -> None:
    found = limits_mismatch(LIMITS, memory, pids)
    assert found == wrong if wrong is None else wrong in found


def test_podman_conf_sets_runc_ulimits_and_short_exec_delay() -> None:
    text = podman.conf_text((1024, 20000), (4096, 32768))
    assert 'runtime = "runc"' in text
    assert 'default_ulimits = ["nofile=1024:20000", "nproc=4096:32768"]' in text
    assert "exit_command_delay = 5" in text


def test_rootless_storage_is_overlay_through_fuse(tmp_path) -> None:
    text = podman.storage_conf_text(True, tmp_path, "/run/user/1000", "/usr/bin/fuse-overlayfs")
    assert 'driver = "overlay"' in text and 'mount_program = "/usr/bin/fuse-overlayfs"' in text
    assert f'graphroot = "{tmp_path}/.local/share/containers/storage"' in text
    assert "mount_program" not in podman.storage_conf_text(False, tmp_path, "/run", "/usr/bin/fuse-overlayfs")


@pytest.mark.parametrize(
    ("tag", "short"),
    [
        ("localhost/swe-srl/base:py3.11-x", "swe-srl/base:py3.11-x"),  # podman load of a docker save
        ("docker.io/swe-srl/base:py3.11-x", "swe-srl/base:py3.11-x"),  # podman pull / skopeo
        ("docker.io/library/python:3.11-slim", "python:3.11-slim"),
        ("swe-srl/base:py3.11-x", "swe-srl/base:py3.11-x"),  # Docker's own name
    ],
)
def test_both_name_forms_are_found(tag: str, short: str) -> None:
    assert short_name(tag) == short


def test_an_ended_owner_is_an_orphan_even_as_a_zombie() -> None:
    # the watcher of a killed owner names it: `kill -0` still succeeds on a zombie its parent has not reaped
    labels = {
        "swe-srl.pid": str(os.getpid()),
        "swe-srl.host": socket.gethostname(),
        "swe-srl.created-at": "0",
    }
    assert orphan_reason(labels, older_than_h=None, everything=False) is None  # alive: kept
    assert orphan_reason(labels, older_than_h=None, everything=False, ended=os.getpid()) == (
        f"its process {os.getpid()} is gone"
    )
