"""Image builds on Podman (the Podman job of ``scripts/test.sh``; skipped on Docker): the local ``podman build``
makes the image the service serves, leaves neither working containers nor intermediate images, and the janitor
removes the working containers of a build whose run is gone (a build killed with its guard), not those of a live
run. Real builds, real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from swe_srl.infra import podman_build
from swe_srl.infra.engine import docker_client, image_exists
from swe_srl.infra.image_build import build_context
from swe_srl.infra.images import ensure_base_image
from swe_srl.infra.sandbox.janitor import container_labels, reap

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def podman_store(docker_engine) -> tuple[str, str]:
    store = podman_build.local_store()
    if store is None:
        pytest.skip("the engine is not a Podman service sharing this user's storage")
    return store


def _podman(*args: str) -> str:
    proc = subprocess.run(
        ["podman", *args], env=podman_build.cli_env(), capture_output=True, text=True, check=True
    )
    return proc.stdout


def test_a_build_runs_locally_and_leaves_only_its_image(podman_store, tmp_path: Path) -> None:
    tag = f"swe-srl/test-build:{uuid.uuid4().hex[:10]}"
    before = set(_podman("images", "--all", "--quiet", "--no-trunc").split())
    dockerfile = f"FROM {ensure_base_image()}\nRUN echo one > /one\nRUN echo two > /two\n"
    try:
        build_context(tag, dockerfile, {}, None)
        assert image_exists(tag)  # the service serves what the local build made
        image = docker_client().images.get(tag)
        labels = image.labels
        assert labels["swe-srl.owner"] == "swe-srl" and labels["swe-srl.run-id"] == ""  # no run's labels kept
        added = set(_podman("images", "--all", "--quiet", "--no-trunc").split()) - before
        assert {i.removeprefix("sha256:") for i in added} == {
            image.id.removeprefix("sha256:")
        }  # no intermediate images (no layer cache)
        assert podman_build.working_containers() == []
    finally:
        subprocess.run(
            ["podman", "rmi", "-f", tag], env=podman_build.cli_env(), capture_output=True, check=False
        )


def _killed_build(tmp_path: Path, name: str, marks: dict[str, str]) -> str:
    """A ``podman build`` killed with its RUN step, as when the guard is killed too: its token."""
    context = tmp_path / name
    context.mkdir()
    (context / "Dockerfile").write_text(f"FROM {ensure_base_image()}\nRUN echo {name} && sleep 300\n")
    token = uuid.uuid4().hex
    cmd = podman_build.build_command(f"swe-srl/test-killed:{name}", context, {}, marks, token)
    proc = subprocess.Popen(cmd, env=podman_build.cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 120
    while not (step := _pids_running(f"echo {name} && sleep 300")):
        assert proc.poll() is None and time.monotonic() < deadline, "the RUN step did not start"
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    for pid in step:  # in a session of its own: what the guard ends
        os.kill(pid, signal.SIGKILL)
    proc.wait()
    return token


def _pids_running(text: str) -> list[int]:
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            if text in Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace"
            ):
                found.append(int(entry))
        except OSError:
            continue
    return found


def test_the_janitor_removes_the_working_containers_of_gone_runs_only(podman_store, tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = _killed_build(tmp_path, "dead", container_labels() | {"swe-srl.pid": str(gone.pid)})
    live = _killed_build(tmp_path, "live", container_labels())  # this process: alive
    try:
        by_token = {w.token: w for w in podman_build.working_containers()}
        assert dead in by_token and live in by_token, json.dumps(list(by_token))
        assert by_token[dead].labels["swe-srl.pid"] == str(gone.pid)
        reaped = {r.container_id: r.reason for r in reap()}
        assert reaped.get(by_token[dead].id) == f"its process {gone.pid} is gone", reaped
        assert by_token[live].id not in reaped
        left = {w.token for w in podman_build.working_containers()}
        assert dead not in left and live in left
    finally:
        podman_build.remove_working(
            [w.id for w in podman_build.working_containers() if w.token in (dead, live)]
        )


def test_registry_images_are_asked_for_by_their_full_name(podman_store) -> None:
    """Podman resolves no short name without a search list (Debian's has none): a build's ``FROM``, an official
    image's pull and the source probe name the registry, as Docker reads the short name. Offline, each then fails
    at the registry (online, the absent names are refused there), never at short-name resolution."""
    from swe_srl.benchmark.instances import Instance, load_instances
    from swe_srl.errors import ImageBuildError
    from swe_srl.infra.official import ensure_official_image
    from swe_srl.infra.sources import probe_image

    with pytest.raises(ImageBuildError) as built:
        build_context(
            f"swe-srl/test-build:{uuid.uuid4().hex[:10]}", "FROM swe-srl-absent:never\nRUN true\n", {}, None
        )
    assert "docker.io/library/swe-srl-absent:never" in str(built.value) and "short-name" not in str(
        built.value
    )
    record = load_instances("bundled:test")[0].to_record() | {"instance_id": "swe-srl__absent-1"}
    with pytest.raises(ImageBuildError) as pulled:
        ensure_official_image(Instance.from_record(record))
    assert "docker.io/swebench/sweb.eval" in str(pulled.value) and "short-name" not in str(pulled.value)
    found, what = probe_image("swebench/sweb.eval.x86_64.swe-srl_1776_absent-1:latest")
    assert not found and "404" not in what, (
        what
    )  # Podman's Docker API answers 404 to any /distribution question
    assert "not in registry docker.io" in what or "registry docker.io unreachable" in what, what
