"""Image builds on Podman: ``podman build`` run by swe-srl itself, and the working containers a stopped build leaves.

Podman's API service builds inside itself (buildah): when the client goes (Ctrl-C, SIGKILL) the build goes on. So
where the service and this user's ``podman`` share one image storage (the same graph root: a local service of this
user, such as the one ``swe-srl setup --engine podman`` starts), :func:`image_build.build_context` runs
``podman build`` itself, under :mod:`orphan_guard`, which ends the build's whole process tree with the run (a RUN
step runs in a session of its own), SIGKILL included. Elsewhere builds go through the API, as on Docker.

A killed build leaves buildah's working containers behind (``podman ps --external``, status ``Storage``). Every
build is marked with build arguments (:data:`MARKS`: the run's id, pid, host and start time, and a token of the
build), which buildah records in each working container's ``buildah.json``; through them the guard removes its
build's containers after a stop (:func:`reap_build`) and the janitor those of runs that are gone
(:func:`working_containers`). The marks are not ``ARG``s of the Dockerfile, so they do not reach the image.

``python -m swe_srl.infra.podman_build reap TOKEN`` is :func:`reap_build`, what the guard runs after a stop.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from swe_srl.infra import podman
from swe_srl.infra.engine import engine_name, libpod_info
from swe_srl.infra.sources import qualified

MARKS = {
    "swe-srl.run-id": "SWE_SRL_RUN_ID",
    "swe-srl.pid": "SWE_SRL_PID",
    "swe-srl.host": "SWE_SRL_HOST",
    "swe-srl.created-at": "SWE_SRL_CREATED_AT",
}
"""Container label → the build argument that carries it into the build's working containers."""
TOKEN_ARG = "SWE_SRL_BUILD"
CLI_TIMEOUT_S = 120


@dataclass(frozen=True)
class Working:
    """A buildah working container of a swe-srl build: its labels (from :data:`MARKS`) and its build's token."""

    id: str
    name: str
    labels: dict[str, str]
    token: str


def cli_env() -> dict[str, str]:
    """The environment of a local ``podman`` command: with the configuration of the service swe-srl started when
    that is the engine in use (its storage.conf names the storage the service uses)."""
    env = dict(os.environ)
    ours, service = podman.service_dir(), podman.service_url()
    if service is not None and os.environ.get("DOCKER_HOST", service) == service:
        env |= {
            "CONTAINERS_CONF": str(ours / "containers.conf"),
            "CONTAINERS_STORAGE_CONF": str(ours / "storage.conf"),
        }
    return env


def cli_store() -> tuple[str, str] | None:
    """(graph root, storage driver) of the local ``podman``; None when it is missing or does not answer."""
    if shutil.which("podman") is None:
        return None
    fmt = "{{.Store.GraphRoot}}\t{{.Store.GraphDriverName}}"
    try:
        proc = subprocess.run(["podman", "info", "--format", fmt], env=cli_env(), capture_output=True, text=True,
                              timeout=CLI_TIMEOUT_S, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    root, _, driver = proc.stdout.strip().partition("\t")
    return (root, driver) if proc.returncode == 0 and root and driver else None


def local_store() -> tuple[str, str] | None:
    """The storage the engine's Podman service and the local ``podman`` share (asked once per process and engine);
    None when the engine is not Podman or they do not share one (another user's service, a remote one): builds
    then go through the API."""
    return _shared_store(engine_name(), os.environ.get("DOCKER_HOST", ""))


@lru_cache(maxsize=4)
def _shared_store(engine: str, url: str) -> tuple[str, str] | None:
    if engine != "podman":
        return None
    local = cli_store()
    service = libpod_info().get("store") or {}
    return local if local is not None and local[0] == service.get("graphRoot") else None


def build_command(
    tag: str, context: Path, labels: dict[str, str], marks: dict[str, str], token: str
) -> list[str]:
    """``podman build`` of ``context`` tagged ``tag``: image ``labels``, the run's ``marks`` (container labels, of
    which :data:`MARKS` are passed on) and ``token`` as build arguments; intermediate containers removed even after
    a failure, and no layer cache (each build's steps carry its run's labels, so the cache would only grow)."""
    args = [f"--build-arg={MARKS[key]}={value}" for key, value in marks.items() if key in MARKS]
    image_labels = [f"--label={key}={value}" for key, value in labels.items()]
    return ["podman", "build", "--layers=false", "--rm", "--force-rm", *image_labels, *args,
            f"--build-arg={TOKEN_ARG}={token}", "--tag", tag, str(context)]  # fmt: skip


def qualify_from(dockerfile: str, is_local) -> str:
    """``dockerfile`` with each ``FROM`` image that ``is_local(name)`` denies written with its registry
    (``sources.qualified``): Podman would pull a short name only through a search list (pure function)."""
    lines, stages = [], {"scratch"}
    for line in dockerfile.splitlines():
        words = [w for w in line.split() if not w.startswith("--")]  # FROM --platform=… image [AS name]
        if len(words) >= 2 and words[0].upper() == "FROM":
            if words[1].lower() not in stages and not is_local(words[1]):
                line = line.replace(words[1], qualified(words[1]), 1)
            if len(words) == 4 and words[2].upper() == "AS":
                stages.add(words[3].lower())
        lines.append(line)
    return "\n".join(lines) + "\n"


def working_from(entry_id: str, name: str, buildah_json: dict) -> Working | None:
    """The swe-srl build a working container's ``buildah.json`` names (pure function); None for other builds."""
    args = buildah_json.get("Args") or {}
    if TOKEN_ARG not in args:
        return None
    labels = {label: str(args[arg]) for label, arg in MARKS.items() if arg in args}
    return Working(entry_id, name, labels, str(args[TOKEN_ARG]))


def working_containers(store: tuple[str, str] | None = None) -> list[Working]:
    """The working containers of swe-srl builds in the shared storage (``store``: :func:`local_store` unless
    given); none when there is no shared storage."""
    store = store or local_store()
    if store is None:
        return []
    proc = subprocess.run(["podman", "ps", "--all", "--external", "--format", "json"], env=cli_env(),
                          capture_output=True, text=True, timeout=CLI_TIMEOUT_S, check=False)  # fmt: skip
    if proc.returncode != 0:
        return []
    found = []
    for entry in json.loads(proc.stdout or "[]") or []:
        path = Path(store[0]) / f"{store[1]}-containers" / entry["Id"] / "userdata" / "buildah.json"
        try:
            meta = json.loads(path.read_text())
        except (OSError, ValueError):  # not a buildah container, or removed meanwhile
            continue
        if (working := working_from(entry["Id"], (entry.get("Names") or [""])[0], meta)) is not None:
            found.append(working)
    return found


def remove_working(ids: list[str]) -> None:
    """Remove working containers (``podman rm --force --storage``)."""
    if ids:
        subprocess.run(["podman", "rm", "--force", "--storage", *ids], env=cli_env(), capture_output=True,
                       timeout=CLI_TIMEOUT_S, check=False)  # fmt: skip


def reap_build(token: str) -> int:
    """Remove the working containers of the build marked ``token``; how many (the guard, after ending it)."""
    store = cli_store()
    ids = [w.id for w in working_containers(store) if w.token == token] if store is not None else []
    remove_working(ids)
    return len(ids)


if __name__ == "__main__":
    if sys.argv[1:2] != ["reap"] or len(sys.argv) != 3:
        sys.exit("usage: python -m swe_srl.infra.podman_build reap TOKEN")
    print(f"removed {reap_build(sys.argv[2])} working container(s)")
