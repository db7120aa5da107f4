"""The container engine: which one (Docker or Podman), connect (with a clear error when it is down), and on a fresh
Linux machine install and start Docker (Podman: ``podman.py``).

One setting picks the engine everywhere (sandboxes, shells, image builds and imports, the janitor):
``$SWE_SRL_ENGINE`` (``docker`` | ``podman``, what ``swe-srl setup --engine`` prints), else the engine that answers at
``$DOCKER_HOST`` (its ``/version`` names "Podman Engine" or not), else Docker. Both speak the Docker API, so
docker-py drives both; the command-line client is ``docker`` or ``podman --remote --url <socket>``
(:func:`engine_cli`). With ``podman`` and no ``DOCKER_HOST``, the service ``swe-srl setup --engine podman`` started
is found again through its pid file and socket in the cache.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import time
from functools import lru_cache
from typing import TYPE_CHECKING

import docker
from rich.console import Console

from swe_srl import paths
from swe_srl.errors import ConfigError, DockerUnavailable
from swe_srl.infra import podman

if TYPE_CHECKING:
    import docker

FIX = (
    "start the Docker daemon (as root: `swe-srl setup` installs and starts it; otherwise `sudo systemctl start docker`)"
    " or point DOCKER_HOST at a running engine"
)


ENGINES = ("docker", "podman")
ENGINE_ENV = "SWE_SRL_ENGINE"


def chosen_engine() -> str | None:
    """``$SWE_SRL_ENGINE`` (validated), or None when it is not set."""
    value = os.environ.get(ENGINE_ENV, "").strip().lower()
    if value and value not in ENGINES:
        raise ConfigError(f"{ENGINE_ENV}={value!r}: choose one of {', '.join(ENGINES)}")
    return value or None


def engine_url() -> str | None:
    """Where the engine's API answers: ``$DOCKER_HOST``, else Podman's service socket (engine ``podman``), else
    None (docker-py's default, ``/var/run/docker.sock``)."""
    if host := os.environ.get("DOCKER_HOST"):
        return host
    if chosen_engine() == "podman":
        url = podman.service_url()
        if url is None:
            raise DockerUnavailable(f"{ENGINE_ENV}=podman but no Podman service runs: {podman.FIX}")
        return url
    return None


@lru_cache(maxsize=1)
def engine_name() -> str:
    """``docker`` or ``podman``: ``$SWE_SRL_ENGINE``, else what answers at ``$DOCKER_HOST`` (cached per process)."""
    if chosen := chosen_engine():
        return chosen
    if not os.environ.get("DOCKER_HOST"):
        return "docker"
    return engine_of(docker_client().version())


def engine_of(version: dict) -> str:
    """``podman`` when the API's ``/version`` names a Podman engine among its components, else ``docker``."""
    names = [str(part.get("Name", "")) for part in version.get("Components") or []]
    return "podman" if any("podman" in name.lower() for name in names) else "docker"


def engine_cli() -> list[str]:
    """The command-line client of the engine in use: ``docker`` or ``podman --remote --url <socket>``."""
    if engine_name() == "docker":
        return ["docker"]
    return ["podman", "--remote", "--url", engine_url() or ""]  # podman: never None (a socket, or it raises)


def use_engine(name: str, url: str) -> None:
    """From now on this process (and the processes it starts) use engine ``name`` at ``url``."""
    os.environ.update({ENGINE_ENV: name, "DOCKER_HOST": url})
    for cached in (engine_name, _cached_client, engine_cpus, libpod_info):
        cached.cache_clear()


@lru_cache(maxsize=1)
def _cached_client() -> docker.DockerClient:
    url = None if os.environ.get("DOCKER_HOST") else engine_url()
    return docker.DockerClient(base_url=url, timeout=600) if url else docker.from_env(timeout=600)


def docker_client() -> docker.DockerClient:
    """A connected docker-py client; raises ``DockerUnavailable`` naming the fix when no engine answers."""

    try:
        client = _cached_client()
        client.ping()
    except docker.errors.DockerException as exc:
        _cached_client.cache_clear()
        host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        name, fix = ("Podman", podman.FIX) if chosen_engine() == "podman" else ("Docker", FIX)
        raise DockerUnavailable(f"no {name} engine answers at {host} ({exc}); {fix}") from None
    return client


@lru_cache(maxsize=1)
def libpod_info() -> dict:
    """Podman's ``/libpod/info`` (host, security, store), asked once per process."""
    api = docker_client().api
    return api._result(api._get(api._url("/libpod/info")), True)


@lru_cache(maxsize=1)
def engine_cpus() -> int:
    """The CPUs of the Docker engine's host (``docker info`` NCPU): the most ``--cpus`` a container may get."""
    return int(docker_client().info().get("NCPU") or os.cpu_count() or 1)


def engine_answers() -> bool:
    """True when ``docker info`` succeeds (engine ``podman``: when its API answers)."""
    if chosen_engine() == "podman":
        try:
            docker_client()
        except DockerUnavailable:
            return False
        return True
    if shutil.which("docker") is None:
        return False
    proc = subprocess.run(["docker", "info"], capture_output=True, check=False, timeout=60)
    return proc.returncode == 0


def image_exists(tag: str) -> bool:
    """True when ``tag`` exists in the local engine."""

    try:
        docker_client().images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    return True


def ensure_engine(console: Console | None = None, *, wait_s: float = 90.0) -> str:
    """Make sure an engine answers: as root on Linux, install ``docker.io`` (apt) and start ``dockerd`` if needed.

    Returns a one-line description of what was done. Idempotent: does nothing when the engine already answers.
    """
    console = console or Console(stderr=True)
    if engine_answers():
        return "Docker engine answers"
    if platform.system() != "Linux" or os.geteuid() != 0:
        raise DockerUnavailable(f"no Docker engine answers and we are not root on Linux: {FIX}")
    done = []
    if shutil.which("dockerd") is None:
        if shutil.which("apt-get") is None:
            raise DockerUnavailable(
                f"no Docker engine and no apt-get to install one: install Docker, then {FIX}"
            )
        with console.status("installing docker.io and docker-compose with apt-get (a minute or two)"):
            _run(["apt-get", "update", "-q"])
            _run(["apt-get", "install", "-y", "-q", "docker.io", "docker-compose"], env={"DEBIAN_FRONTEND": "noninteractive"})  # fmt: skip
        done.append("installed docker.io and docker-compose")
    log = paths.cache_dir("logs") / "dockerd.log"
    with console.status(f"starting dockerd (log: {log})"):
        with open(log, "ab") as out:
            subprocess.Popen(["dockerd"], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True)  # fmt: skip
        deadline = time.monotonic() + wait_s
        while not engine_answers():
            if time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-1500:]
                raise DockerUnavailable(f"dockerd did not answer within {wait_s:.0f}s; see {log}:\n{tail}")
            time.sleep(0.5)
    done.append("started dockerd")
    return ", ".join(done)


def _run(cmd: list[str], env: dict[str, str] | None = None) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env={**os.environ, **(env or {})})
    if proc.returncode != 0:
        raise DockerUnavailable(f"`{' '.join(cmd)}` failed ({proc.returncode}): {proc.stderr.strip()[-800:]}")


def ensure_debootstrap(console: Console | None = None) -> bool:
    """Install ``debootstrap`` with apt when missing and we are root; True when it is available."""
    if shutil.which("debootstrap"):
        return True
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return False
    with (console or Console(stderr=True)).status("installing debootstrap with apt-get"):
        _run(["apt-get", "install", "-y", "-q", "debootstrap"], env={"DEBIAN_FRONTEND": "noninteractive"})
    return shutil.which("debootstrap") is not None
