"""The harness tools need Python >= 3.9: an instance image whose ``python3`` is older (a registry base with the spec's
exact 3.5-3.8) gets their ``#!`` line pinned to a newer interpreter of the image; others keep ``#!/usr/bin/env
python3``. The old interpreter here is a stand-in that fails the version check, first on PATH."""

from __future__ import annotations

import pytest

from swe_srl.infra.image_build import build_context
from swe_srl.infra.images import EnvRecipe, InstanceRecipe, ensure_env_image, ensure_instance_image
from swe_srl.infra.sandbox.base import SandboxSpec
from swe_srl.infra.sandbox.docker import DockerSandbox

pytestmark = pytest.mark.docker

OLD = "#!/bin/sh\n# stands in for a Python older than 3.9: fails every -c check, runs nothing\nexit 1\n"


@pytest.fixture(scope="module")
def old_env(docker_engine) -> str:
    env = ensure_env_image(EnvRecipe(name="tiny", python="3.11", setup_script="python -V\n"))
    tag = f"{env.replace('swe-srl/env:', 'swe-srl/env:oldpy-')}"
    dockerfile = f"FROM {env}\nCOPY python3 /opt/old/bin/python3\nRUN chmod 0755 /opt/old/bin/python3\nENV PATH=/opt/old/bin:$PATH\n"
    build_context(tag, dockerfile, {"python3": OLD.encode()}, None)
    return tag


def test_tools_of_an_old_python_image_run_on_a_newer_one(old_env: str, tiny_repo) -> None:
    repo, base, _ = tiny_repo
    image = ensure_instance_image(
        InstanceRecipe(name="tiny-oldpy", env_image=old_env, repo_dir=repo, base_commit=base)
    )
    with DockerSandbox(SandboxSpec(image=image)) as box:
        assert (
            box.run("python3 -c 'print(1)'; echo $?").output.split()[-1] == "1"
        )  # the old one is first on PATH
        assert box.run("head -1 /usr/local/bin/open; cat /etc/swe-srl-tool-python").output.split() == [
            "#!/opt/venv/bin/python3",
            "/opt/venv/bin/python3",
        ]
        opened = box.run("open calc.py")
        assert opened.exit_code == 0 and "[File: /testbed/calc.py (2 lines total)]" in opened.output, (
            opened.output
        )


def test_tools_of_a_new_python_image_keep_env_python(docker_engine, tiny_repo) -> None:
    repo, base, _ = tiny_repo
    env = ensure_env_image(EnvRecipe(name="tiny", python="3.11", setup_script="python -V\n"))
    image = ensure_instance_image(
        InstanceRecipe(name="tiny-newpy", env_image=env, repo_dir=repo, base_commit=base)
    )
    with DockerSandbox(SandboxSpec(image=image)) as box:
        assert box.run("head -1 /usr/local/bin/open").output.strip() == "#!/usr/bin/env python3"
        assert box.run("test -e /etc/swe-srl-tool-python; echo $?").output.strip() == "1"
        assert box.run("open calc.py").exit_code == 0
