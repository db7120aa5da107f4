"""Docker fixtures: the engine (skip only when none answers), a tiny instance image, and a leak check at the end."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from swe_srl.errors import DockerUnavailable

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
}


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    )
    return proc.stdout.strip()


@pytest.fixture(scope="session")
def tiny_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A deterministic two-commit repo: (path, base_commit, future_commit)."""
    repo = tmp_path_factory.mktemp("tiny-repo")
    _git(repo, "init", "-q", "-b", "dev")
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "data.bin").write_bytes(bytes(range(256)))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    base = _git(repo, "rev-parse", "HEAD")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    _git(repo, "commit", "-q", "-am", "the future fix")
    return repo, base, _git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="session")
def tiny_image(docker_engine, tiny_repo) -> str:
    """An instance image: 3.11 base → env (no deps) → /testbed holding only the base commit of ``tiny_repo``."""
    from swe_srl.infra.images import EnvRecipe, InstanceRecipe, ensure_env_image, ensure_instance_image

    env = ensure_env_image(EnvRecipe(name="tiny", python="3.11", setup_script="python -V\n"))
    repo, base, _ = tiny_repo
    return ensure_instance_image(InstanceRecipe(name="tiny", env_image=env, repo_dir=repo, base_commit=base))


def _leaked(client, since: float) -> list:
    """swe-srl containers of this test process, or created since ``since`` by a process of this host that is gone
    (a CLI subprocess's leak); other people's runs on a shared engine are not ours to judge."""
    from swe_srl.infra.sandbox.janitor import orphan_reason

    mine = []
    # sparse: no inspect of each container, which fails for one that removed itself meanwhile
    for container in client.containers.list(
        all=True, sparse=True, filters={"label": "swe-srl.owner=swe-srl"}
    ):
        labels = container.attrs.get("Labels") or {}
        if labels.get("swe-srl.pid") == str(os.getpid()) or orphan_reason(
            labels, older_than_h=None, everything=False
        ):
            mine.append(container)
    return mine


@pytest.fixture(scope="session", autouse=True)
def no_container_left() -> Iterator[None]:
    """After the docker tests, no swe-srl container of this run may be left (they are removed, then we fail)."""
    since = time.time() - 1
    yield
    from swe_srl.infra.engine import docker_client

    try:
        client = docker_client()
    except DockerUnavailable:
        return
    leaked = _leaked(client, since)
    for container in leaked:
        container.remove(force=True)
    assert not leaked, f"swe-srl containers left behind: {[c.id[:12] for c in leaked]}"
