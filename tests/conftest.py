"""Fixtures shared by every test tier: the Docker engine (docker, e2e and train tests that start containers)."""

from __future__ import annotations

import pytest

from swe_srl.errors import DockerUnavailable


@pytest.fixture(scope="session")
def docker_engine():
    """A connected docker-py client; the test is skipped only when no engine answers."""
    from swe_srl.infra.engine import docker_client

    try:
        return docker_client()
    except DockerUnavailable as exc:
        pytest.skip(f"no Docker engine answers: {exc}")
