"""Image sources, pure: the official naming and escape, the source a probe's findings choose, the Python each
source gives an instance, the checks of a requested source."""

from __future__ import annotations

import subprocess
import sys

import pytest

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.specs import base_python
from swe_srl.errors import ConfigError
from swe_srl.infra.images import SUITES, EnvRecipe, base_image_tag, env_image_tag
from swe_srl.infra.official import ACTIVATE, official_image_name, prebuilt_image, setup_script
from swe_srl.infra.recipes import image_python
from swe_srl.infra.sources import SOURCES, choose_source, decide, registry_of, requested_source


@pytest.mark.parametrize(
    ("instance_id", "name"),
    [
        ("django__django-11099", "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"),
        ("astropy__astropy-12907", "swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest"),
        ("pytest-dev__pytest-5103", "swebench/sweb.eval.x86_64.pytest-dev_1776_pytest-5103:latest"),
        ("Sphinx-Doc__Sphinx-8721", "swebench/sweb.eval.x86_64.sphinx-doc_1776_sphinx-8721:latest"),
    ],
)
def test_official_names_escape_dunders_and_lowercase(instance_id: str, name: str) -> None:
    assert official_image_name(instance_id) == name


def test_official_name_parts() -> None:
    assert (
        official_image_name("a__b-1", namespace="me", arch="arm64", tag="v2")
        == "me/sweb.eval.arm64.a_1776_b-1:v2"
    )
    assert ACTIVATE == "source /opt/miniconda3/bin/activate && conda activate testbed"


@pytest.mark.parametrize(
    ("found", "bootstrap_ok", "chosen"),
    [
        ({"swebench": True, "registry": True}, True, "swebench"),
        ({"swebench": True}, False, "swebench"),
        ({"swebench": False, "registry": True}, True, "registry"),
        ({"registry": True}, True, "registry"),
        ({"swebench": False, "registry": False}, True, "debootstrap"),
        ({}, True, "debootstrap"),
        (
            {"swebench": False, "registry": False},
            False,
            "registry",
        ),  # nothing works here: registry's own error
    ],
)
def test_the_most_faithful_source_found_wins(found: dict, bootstrap_ok: bool, chosen: str) -> None:
    assert decide(found, bootstrap_ok) == chosen


def test_requested_source(monkeypatch) -> None:
    monkeypatch.delenv("SWE_SRL_IMAGE_SOURCE", raising=False)
    assert requested_source() == "auto"
    monkeypatch.setenv("SWE_SRL_IMAGE_SOURCE", "registry")
    assert requested_source() == "registry" and requested_source("swebench") == "swebench"
    monkeypatch.setenv("SWE_SRL_IMAGE_SOURCE", "official")
    with pytest.raises(ConfigError, match=r"'official'.*auto, swebench, registry, debootstrap"):
        requested_source()
    with pytest.raises(ConfigError, match="'podman'"):
        requested_source("podman")
    assert SOURCES == ("auto", "swebench", "registry", "debootstrap")


def test_an_explicit_source_is_not_probed() -> None:
    choice = choose_source("swebench/sweb.eval.x86_64.x_1776_y-1:latest", "3.6", "registry")
    assert (choice.source, choice.requested, choice.probe) == ("registry", "registry", {})
    assert choice.provenance() == {
        "image_source": "registry",
        "image_source_requested": "registry",
        "image_probe": {},
    }


def test_registry_hosts() -> None:
    assert registry_of("swebench/sweb.eval.x86_64.a_1776_b-1:latest") == "docker.io"
    assert registry_of("python:3.11-slim") == "docker.io"
    assert registry_of("ghcr.io/org/image:tag") == "ghcr.io"
    assert registry_of("localhost:5000/image") == "localhost:5000"


def _instance(python: str) -> Instance:
    env = {"python": python, "test_cmd": "pytest -rA", "install": ""}
    return Instance("o__r-1", "o/r", "abc", "", "", "", version="1.0", extra={"env": env})


@pytest.mark.parametrize("python", ["3.6", "3.8", "3.9", "3.10", "3.12"])
def test_registry_gives_the_exact_python_debootstrap_a_suite_at_or_above(python: str) -> None:
    instance = _instance(python)
    assert image_python(instance, "registry") == image_python(instance, "swebench") == python
    nearest = image_python(instance, "debootstrap")
    assert nearest in SUITES and _xy(nearest) >= _xy(python) and nearest == base_python(python)


def _xy(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


@pytest.mark.parametrize(
    "command",
    [
        ["eval", "--policy", "gold", "-o", "{out}", "--image-source", "podman"],
        ["tasks", "validate", "bundled", "-o", "{out}", "--image-source", "podman"],
        ["images", "build", "--image-source", "podman"],
        ["shell", "x__y-1", "--image-source", "podman"],
        ["setup", "--source", "podman"],
    ],
)
def test_the_cli_rejects_an_unknown_source_in_one_line(command: list[str], tmp_path) -> None:
    args = [part.format(out=tmp_path / "out") for part in command]
    proc = subprocess.run(
        [sys.executable, "-m", "swe_srl.cli", *args], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert (
        line.startswith("error: ") and "'podman': use one of auto, swebench, registry, debootstrap" in line
    ), line
    assert not (tmp_path / "out").exists()  # no work was done


def test_registry_bases_take_any_python_debootstrap_its_suites() -> None:
    assert base_image_tag("3.6", source="registry").startswith("swe-srl/base:py3.6-slim-")
    assert base_image_tag("3.11", source="debootstrap").startswith("swe-srl/base:py3.11-bookworm-")
    with pytest.raises(ConfigError, match=r"python='3.6': debootstrap base images exist for 3.9, 3.11, 3.13"):
        base_image_tag("3.6", source="debootstrap")
    with pytest.raises(ConfigError, match="python='py3'"):
        base_image_tag("py3", source="registry")
    on = {
        s: env_image_tag(EnvRecipe("r-1.0", "3.11", "pip install x\n", source=s))
        for s in ("registry", "debootstrap")
    }
    assert on["registry"] != on["debootstrap"]  # the base's source is part of the env image's identity


def test_prebuilt_images_of_training_sets_and_their_setup() -> None:
    sha = "a" * 40
    bench = Instance("django__django-11099", "django/django", sha, "", "", "")
    assert prebuilt_image(bench) == "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"
    gym = Instance("python__mypy-15976", "python/mypy", sha, "", "", "", extra={"source": "SWE-Gym/SWE-Gym",
                   "image_name": "xingyaoww/sweb.eval.x86_64.python_s_mypy-15976"})  # fmt: skip
    assert prebuilt_image(gym) == "xingyaoww/sweb.eval.x86_64.python_s_mypy-15976"
    (check,) = setup_script(gym, prebuilt_image(gym)).splitlines()[
        1:
    ]  # nothing to set up; the commit must be there
    assert check.startswith(f"git -C /testbed cat-file -e '{sha}^{{commit}}' || ") and check.endswith(
        "exit 1; }"
    )
    assert "is not in xingyaoww/sweb.eval.x86_64.python_s_mypy-15976; build it offline" in check
    branch = "o__r.0123abcd.func_pm_op_change__x"
    smith = Instance(branch, "swesmith/o__r.0123abcd", branch, "", "", "", extra={"source": "SWE-bench/SWE-smith",
                     "image_name": "jyangballin/swesmith.x86_64.o_1776_r.0123abcd", "bug_patch": "BUG"})  # fmt: skip
    lines = setup_script(smith, prebuilt_image(smith)).splitlines()
    assert lines[0] == "set -euo pipefail" and "git apply" in lines[1] and "BUG" in lines
    assert lines[-1] == f"git -C /testbed branch -f {branch} HEAD"  # the record's branch, at the bug commit
