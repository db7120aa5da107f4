"""The marks of a Podman build (pure functions): what ``podman build`` is given, and how a working container's
``buildah.json`` is read back into the run's labels."""

from __future__ import annotations

from pathlib import Path

from swe_srl.infra.podman_build import MARKS, TOKEN_ARG, build_command, working_from

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
