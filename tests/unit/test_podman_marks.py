"""The marks of a Podman build (pure functions): what ``podman build`` is given, and how a working container's
``buildah.json`` is read back into the run's labels."""

from __future__ import annotations

from pathlib import Path

from swe_srl.infra.podman_build import MARKS, TOKEN_ARG, build_command, qualify_from, working_from
from swe_srl.infra.sources import qualified

RUN = {"swe-srl.owner": "swe-srl", "swe-srl.run-id": "r-1", "swe-srl.pid": "42", "swe-srl.host": "h",
       "swe-srl.created-at": "1700000000"}  # fmt: skip


def test_the_build_carries_the_run_as_build_arguments_and_keeps_no_cache() -> None:
    cmd = build_command("swe-srl/env:x", Path("/ctx"), {"swe-srl.owner": "swe-srl"}, RUN, "tok")
    assert cmd[:2] == ["podman", "build"] and cmd[-3:] == ["--tag", "swe-srl/env:x", "/ctx"]
    assert {"--layers=false", "--rm", "--force-rm", "--label=swe-srl.owner=swe-srl"} <= set(cmd)
    args = dict(a.removeprefix("--build-arg=").split("=", 1) for a in cmd if a.startswith("--build-arg="))
    assert args == {"SWE_SRL_RUN_ID": "r-1", "SWE_SRL_PID": "42", "SWE_SRL_HOST": "h",
                    "SWE_SRL_CREATED_AT": "1700000000", TOKEN_ARG: "tok"}  # fmt: skip
    assert "--build-arg=swe-srl.owner" not in " ".join(cmd)  # the owner is a label of the image, not a mark


def test_a_working_container_is_read_back_into_the_runs_labels() -> None:
    cmd = build_command("t", Path("/c"), {}, RUN, "tok")
    args = dict(a.removeprefix("--build-arg=").split("=", 1) for a in cmd if a.startswith("--build-arg="))
    working = working_from("abc", "base-working-container", {"Args": args, "container-name": "x"})
    assert working is not None and working.token == "tok" and working.name == "base-working-container"
    assert working.labels == {key: RUN[key] for key in MARKS}
    assert working_from("abc", "n", {"Args": {"OTHER": "1"}}) is None  # another tool's build
    assert working_from("abc", "n", {}) is None


def test_short_names_are_written_with_their_registry_as_docker_reads_them() -> None:
    assert qualified("python:3.11-slim") == "docker.io/library/python:3.11-slim"
    assert (
        qualified("swebench/sweb.eval.x86_64.a__b-1:latest")
        == "docker.io/swebench/sweb.eval.x86_64.a__b-1:latest"
    )
    for name in (
        "docker.io/library/python:3",
        "localhost/swe-srl/base:x",
        "localhost:5000/x:1",
        "ghcr.io/o/x:1",
    ):
        assert qualified(name) == name


def test_from_lines_name_a_registry_unless_the_image_is_here() -> None:
    here = {"swe-srl/base:py3.11"}
    text = "FROM swe-srl/base:py3.11\nRUN true\nFROM --platform=linux/amd64 python:3.11-slim AS tools\nFROM tools\n"
    assert qualify_from(text, here.__contains__) == (
        "FROM swe-srl/base:py3.11\nRUN true\n"
        "FROM --platform=linux/amd64 docker.io/library/python:3.11-slim AS tools\nFROM tools\n"
    )
    assert qualify_from("FROM scratch\n", here.__contains__) == "FROM scratch\n"
