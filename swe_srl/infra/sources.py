"""Where instance images come from (the image sources), and the probe that picks the default (``auto``).

* ``swebench``: SWE-bench's official prebuilt instance images (``infra/official.py``), used as they are, with only
  our harness tools added in a thin layer; pulled when missing.
* ``registry``: our recipes (``infra/recipes.py``) on ``python:X.Y-slim`` with the spec's exact X.Y.
* ``debootstrap``: our recipes on a Debian base built offline; its Python is the nearest Debian suite's at or above
  the spec's (``benchmark.specs.base_python``).
* ``auto`` (default): the most faithful source that works, found by a probe with a short timeout
  (:data:`PROBE_TIMEOUT_S` per registry question): the official image present locally or its manifest answering →
  ``swebench``; else ``python:X.Y-slim`` present or answering → ``registry``; else ``debootstrap`` (``registry``
  where debootstrap cannot run: not root or not installed). The choice and what the probe found are recorded in
  every grade's image provenance (``recipes.image_provenance``).

The requested source is ``--image-source`` (which sets ``$SWE_SRL_IMAGE_SOURCE`` for the process and the workers it
spawns), else ``$SWE_SRL_IMAGE_SOURCE``, else ``auto``. Base images alone (``swe-srl images base``) are chosen by
:func:`resolve_source` (``$SWE_SRL_BASE_SOURCE``, then the same probe without the official step). A registry that
did not answer (no route, no DNS, timeout) is not asked again by this process; choices are memoized per process, so
the image built and the provenance recorded agree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache

import docker
import requests

from swe_srl.errors import ConfigError, DockerUnavailable
from swe_srl.infra.engine import engine_cli, engine_name, image_exists

SOURCES = ("auto", "swebench", "registry", "debootstrap")
BASE_SOURCES = ("auto", "debootstrap", "registry")
IMAGE_SOURCE_ENV = "SWE_SRL_IMAGE_SOURCE"
BASE_SOURCE_ENV = "SWE_SRL_BASE_SOURCE"
PROBE_TIMEOUT_S = 5.0
SINGLE_OCI_IMAGE = "Treating single images as manifest lists is not implemented"
"""Podman 4.3's ``manifest inspect`` fetched an image's manifest (so it is there) but prints only lists."""
_ABSENT = ("manifest unknown", "not found", "denied", "unauthorized", "does not exist")
_unreachable: dict[str, str] = {}
"""Registry host → why it did not answer (asked once per process)."""
_choices: dict[tuple[str, str, str], SourceChoice] = {}


def check_source(value: str, choices: tuple[str, ...] = SOURCES, what: str = "image source") -> str:
    """``value`` when it is one of ``choices``, else ``ConfigError`` naming it and the choices."""
    if value not in choices:
        raise ConfigError(f"{what} {value!r}: use one of {', '.join(choices)}")
    return value


def requested_source(source: str | None = None) -> str:
    """``source``, else ``$SWE_SRL_IMAGE_SOURCE``, else ``auto`` (checked)."""
    value = source or os.environ.get(IMAGE_SOURCE_ENV) or "auto"
    return check_source(value, what=f"image source (--image-source / ${IMAGE_SOURCE_ENV})")


def select_image_source(source: str | None) -> None:
    """The CLI's ``--image-source`` (None: ``$SWE_SRL_IMAGE_SOURCE`` or ``auto``), checked before any work, then in
    ``$SWE_SRL_IMAGE_SOURCE`` for this process and the workers it spawns."""
    os.environ[IMAGE_SOURCE_ENV] = requested_source(source)


def can_bootstrap() -> bool:
    """debootstrap can build base images here (installed, and this process is root)."""
    return shutil.which("debootstrap") is not None and os.geteuid() == 0


def decide(found: dict[str, bool], bootstrap_ok: bool) -> str:
    """The most faithful source whose image the probe found (pure): ``found`` maps ``swebench``/``registry`` to
    whether their image is usable; the offline build last (``registry`` when debootstrap cannot run here)."""
    for source in ("swebench", "registry"):
        if found.get(source):
            return source
    return "debootstrap" if bootstrap_ok else "registry"


def registry_of(name: str) -> str:
    """The registry host of image ``name`` (Docker Hub for names without a host part)."""
    first, _, rest = name.partition("/")
    return first if rest and ("." in first or ":" in first or first == "localhost") else "docker.io"


def qualified(name: str) -> str:
    """``name`` with its registry, as Docker reads a short name (``python:3.11-slim`` →
    ``docker.io/library/python:3.11-slim``; ``swebench/x`` → ``docker.io/swebench/x``). Podman pulls short names
    only through an ``unqualified-search-registries`` list, which a stock configuration lacks."""
    if registry_of(name) != "docker.io" or name.startswith("docker.io/"):
        return name
    return f"docker.io/{name}" if "/" in name else f"docker.io/library/{name}"


@lru_cache(maxsize=1)
def _probe_client() -> docker.DockerClient:
    return docker.from_env(timeout=PROBE_TIMEOUT_S)


def probe_image(name: str) -> tuple[bool, str]:
    """Whether image ``name`` can be used without building it: present locally, or its manifest answers in the
    registry within :data:`PROBE_TIMEOUT_S`; and what was found, in words."""
    try:
        if image_exists(name):
            return True, "present locally"
    except DockerUnavailable as exc:  # nothing can be built or pulled either; the build says so
        return False, str(exc)[:160]
    host = registry_of(name)
    if host in _unreachable:
        return _unreachable_now(host, _unreachable[host])
    if engine_name() == "podman":  # its Docker API has no /distribution: it answers 404 for every name
        return _probe_with_cli(name, host)
    try:
        _probe_client().api.inspect_distribution(name)
    except docker.errors.APIError as exc:
        text = f"{exc.status_code} {exc.explanation or exc}"
        if exc.status_code in (401, 403, 404) or any(word in text.lower() for word in _ABSENT):
            return False, f"not local; not in registry {host} ({text[:160]})"
        return _unreachable_now(host, text[:160])
    except (requests.RequestException, docker.errors.DockerException) as exc:
        return _unreachable_now(host, f"no answer within {PROBE_TIMEOUT_S:g}s: {type(exc).__name__}")
    return True, f"pullable from {host}"


def _probe_with_cli(name: str, host: str) -> tuple[bool, str]:
    """:func:`probe_image`'s registry question through the engine's CLI (``podman manifest inspect``), which asks
    with the engine's own registry configuration (mirrors, credentials)."""
    cmd = [*engine_cli(), "manifest", "inspect", qualified(name)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return _unreachable_now(host, f"no answer within {PROBE_TIMEOUT_S:g}s")
    if proc.returncode == 0 or SINGLE_OCI_IMAGE in proc.stderr:
        return True, f"pullable from {host}"
    text = proc.stderr.strip().removeprefix("Error: ")[-160:]
    if any(word in text.lower() for word in _ABSENT) and "no such host" not in text:
        return False, f"not local; not in registry {host} ({text})"
    return _unreachable_now(host, text)


def _unreachable_now(host: str, why: str) -> tuple[bool, str]:
    """:func:`probe_image`'s answer for a registry that did not answer; it is not asked again by this process."""
    _unreachable[host] = why
    return False, f"not local; registry {host} unreachable ({why})"


@dataclass(frozen=True)
class SourceChoice:
    """The source an image comes from, what was asked for, and what the probe found (image name → words)."""

    source: str
    requested: str
    probe: dict[str, str] = field(default_factory=dict)

    def provenance(self) -> dict[str, object]:
        return {
            "image_source": self.source,
            "image_source_requested": self.requested,
            "image_probe": self.probe,
        }


def choose_source(official: str | None, python: str, requested: str | None = None) -> SourceChoice:
    """The source of an instance image (memoized): ``official`` is its official image name (None: it has none),
    ``python`` the spec's X.Y (for ``python:X.Y-slim``; ``""`` when it has no spec); ``requested`` as
    :func:`requested_source`.
    ``auto`` after the official step honours ``$SWE_SRL_BASE_SOURCE`` as :func:`resolve_source` does."""
    asked = requested_source(requested)
    key = (official or "", python, asked)
    if key not in _choices:
        _choices[key] = SourceChoice(asked, asked) if asked != "auto" else _probe(official, python)
    return _choices[key]


def _probe(official: str | None, python: str) -> SourceChoice:
    probe: dict[str, str] = {}
    found: dict[str, bool] = {}
    if official:
        found["swebench"], probe[official] = probe_image(official)
    base = os.environ.get(BASE_SOURCE_ENV, "auto")
    if not found.get("swebench") and base != "auto":
        probe[BASE_SOURCE_ENV] = check_source(base, BASE_SOURCES, f"${BASE_SOURCE_ENV}")
        return SourceChoice(base, "auto", probe)
    if not found.get("swebench") and python:  # no python: no spec, so no offline build either
        slim = f"python:{python}-slim"
        found["registry"], probe[slim] = probe_image(slim)
    return SourceChoice(decide(found, can_bootstrap()), "auto", probe)


def resolve_source(source: str = "auto", python: str = "3.11") -> str:
    """A base image's source: ``source``, else ``$SWE_SRL_BASE_SOURCE``, else the probe without the official step
    (``python:X.Y-slim`` usable → ``registry``, else ``debootstrap`` where it can run)."""
    if source == "auto":
        source = os.environ.get(BASE_SOURCE_ENV, "auto")
    check_source(source, BASE_SOURCES, f"base image source (or ${BASE_SOURCE_ENV})")
    if source != "auto":
        return source
    return choose_source(None, python, "auto").source
