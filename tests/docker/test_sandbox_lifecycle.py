"""Lifecycle and bad input on real containers: labels, close, janitor, SIGTERM, warm pool, builder errors."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import docker
import pytest

from swe_srl.errors import (
    ConfigError,
    ContainerDied,
    DockerUnavailable,
    ImageBuildError,
    ImageNotFound,
    SandboxError,
)
from swe_srl.infra.sandbox.base import Limits, SandboxSpec
from swe_srl.infra.sandbox.docker import DockerSandbox
from swe_srl.infra.sandbox.janitor import RUN_ID, reap
from swe_srl.infra.sandbox.pool import WarmPool

pytestmark = pytest.mark.docker


def swe_containers(client) -> set[str]:
    return {
        c.id
        for c in client.containers.list(all=True, sparse=True, filters={"label": "swe-srl.owner=swe-srl"})
    }


def test_labels_and_idempotent_close(tiny_image: str, docker_engine) -> None:
    box = DockerSandbox(SandboxSpec(image=tiny_image)).start()
    labels = docker_engine.containers.get(box.container_id).labels
    assert labels["swe-srl.owner"] == "swe-srl" and labels["swe-srl.run-id"] == RUN_ID
    assert labels["swe-srl.pid"] == str(os.getpid()) and int(labels["swe-srl.created-at"]) <= time.time()
    box.close()
    box.close()
    with pytest.raises(docker.errors.NotFound):
        docker_engine.containers.get(box.container_id)
    with pytest.raises(SandboxError, match="closed"):
        box.run("true")


def test_container_removed_underneath_is_container_died(tiny_image: str, docker_engine) -> None:
    with DockerSandbox(SandboxSpec(image=tiny_image)) as box:
        docker_engine.containers.get(box.container_id).remove(force=True)
        with pytest.raises(ContainerDied, match=box.container_id):
            box.run("echo hi")


def test_unknown_image_names_tag_and_fix(docker_engine) -> None:
    before = swe_containers(docker_engine)
    with pytest.raises(ImageNotFound, match=r"swe-srl/instance:does-not-exist.*swe-srl setup"):
        DockerSandbox(SandboxSpec(image="swe-srl/instance:does-not-exist")).start()
    assert swe_containers(docker_engine) == before


@pytest.mark.parametrize(
    "limits",
    [
        {"memory": "4m"},  # below Docker's minimum
        {"cpus": 512.0},  # more CPUs than the host has
    ],
)
def test_invalid_limit_is_config_error_and_leaves_nothing(tiny_image: str, docker_engine, limits) -> None:
    before = swe_containers(docker_engine)
    with pytest.raises(ConfigError, match="Limits"):
        DockerSandbox(SandboxSpec(image=tiny_image, limits=Limits(**limits))).start()
    assert swe_containers(docker_engine) == before


def test_daemon_down_names_the_fix(monkeypatch: pytest.MonkeyPatch, docker_engine) -> None:
    from swe_srl.infra import engine

    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    engine._cached_client.cache_clear()
    try:
        with pytest.raises(DockerUnavailable, match=r"nonexistent/docker.sock.*swe-srl setup"):
            DockerSandbox(SandboxSpec(image="anything")).start()
    finally:
        engine._cached_client.cache_clear()


def orphan_labels(pid: int, host: str, age_h: float) -> dict[str, str]:
    created = str(int(time.time() - age_h * 3600))
    labels = {
        "swe-srl.owner": "swe-srl",
        "swe-srl.run-id": "t",
        "swe-srl.pid": str(pid),
        "swe-srl.host": host,
    }
    return {**labels, "swe-srl.created-at": created}


def test_janitor_reaps_dead_and_old_runs_only(tiny_image: str, docker_engine) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    run = docker_engine.containers.run
    orphan = run(
        tiny_image, ["sleep", "infinity"], detach=True, labels=orphan_labels(dead.pid, os.uname().nodename, 0)
    )
    # Another host's container (pid unknowable here), two days old: only --older-than may take it.
    old = run(tiny_image, ["sleep", "infinity"], detach=True, labels=orphan_labels(1, "elsewhere", 48))
    with DockerSandbox(SandboxSpec(image=tiny_image)) as live:
        reap()  # (other processes on this engine may reap the dead run's orphan too)
        assert orphan.id not in swe_containers(docker_engine)
        assert {old.id, live.container_id} <= swe_containers(docker_engine)
        out = subprocess.run(
            ["swe-srl", "janitor", "--older-than", "24"], capture_output=True, text=True, check=True
        )
        assert f"{old.name} ({old.id[:12]}): older than 24 h" in out.stdout
        assert old.id not in swe_containers(docker_engine)
        assert live.container_id in swe_containers(docker_engine)


def test_sigterm_closes_sandboxes(tiny_image: str, docker_engine) -> None:
    script = textwrap.dedent(f"""
        import time
        from swe_srl.infra.sandbox.base import SandboxSpec
        from swe_srl.infra.sandbox.docker import DockerSandbox
        from swe_srl.infra.sandbox.signals import install_sigterm_handler
        install_sigterm_handler()
        box = DockerSandbox(SandboxSpec(image={tiny_image!r})).start()
        print(box.container_id, flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    container_id = proc.stdout.readline().strip()  # type: ignore[union-attr]
    assert container_id in swe_containers(docker_engine)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    assert container_id not in swe_containers(docker_engine)


def test_warm_pool_hands_out_started_sandboxes(tiny_image: str, docker_engine) -> None:
    spec = SandboxSpec(image=tiny_image)
    with WarmPool(size=1) as pool:
        pool.prefill(spec)
        deadline = time.monotonic() + 30
        while pool.ready_count(spec) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        start = time.perf_counter()
        box = pool.acquire(spec)
        assert box.run("echo warm").output == "warm\n"
        assert time.perf_counter() - start < 0.3
        pool.release(box)
        assert box.container_id not in swe_containers(docker_engine)
    assert not pool.errors


def test_build_error_shows_log_tail(docker_engine) -> None:
    from swe_srl.infra.images import EnvRecipe, ensure_env_image

    recipe = EnvRecipe(name="broken", python="3.11", setup_script="echo boom-marker-$((6*7)); exit 3\n")
    with pytest.raises(ImageBuildError, match="boom-marker-42"):
        ensure_env_image(recipe)


def test_instance_with_unknown_commit_fails_clearly(tiny_image: str, tiny_repo) -> None:
    from swe_srl.infra.images import InstanceRecipe, ensure_instance_image

    repo, _, _ = tiny_repo
    recipe = InstanceRecipe(name="bad", env_image=tiny_image, repo_dir=repo, base_commit="0" * 40)
    with pytest.raises(ImageBuildError, match="0000000000"):
        ensure_instance_image(recipe)


def test_same_recipe_reuses_tag(tiny_repo, tiny_image: str) -> None:
    from swe_srl.infra.images import (
        EnvRecipe,
        InstanceRecipe,
        ensure_env_image,
        ensure_instance_image,
        env_image_tag,
    )

    env = ensure_env_image(EnvRecipe(name="tiny", python="3.11", setup_script="python -V\n"))
    repo, base, _ = tiny_repo
    start = time.perf_counter()
    again = ensure_instance_image(InstanceRecipe(name="tiny", env_image=env, repo_dir=repo, base_commit=base))
    assert again == tiny_image and time.perf_counter() - start < 2
    assert env_image_tag(EnvRecipe("tiny", "3.11", "python -VV\n")) != env
