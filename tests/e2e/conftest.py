"""Fixtures of the end-to-end tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docker"))  # agent_tasks


@pytest.fixture(scope="module")
def tiny(docker_engine, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from agent_tasks import make_tiny_dataset

    from swe_srl.benchmark.instances import load_instances
    from swe_srl.infra.recipes import instance_image

    path = make_tiny_dataset(tmp_path_factory.mktemp("tiny-tasks"))
    for instance in load_instances(str(path)):
        instance_image(instance)
    return path
