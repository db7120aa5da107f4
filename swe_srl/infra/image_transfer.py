"""Images moved between engines without a registry: ``docker save`` → a tar file → ``podman load`` (any direction).

:func:`export_images` writes the engine's archive of some tags (the Docker archive format both engines read);
:func:`import_images` loads one and tags every image under the short name swe-srl asks for as well
(``swe-srl/base:…``): Podman stores names it loads as ``localhost/…`` or ``docker.io/…``, and a lookup of the
short name must find either (:func:`short_name`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import docker

from swe_srl.errors import ConfigError, ImageNotFound
from swe_srl.infra.engine import docker_client, engine_name, image_exists

PREFIXES = ("localhost/", "docker.io/library/", "docker.io/")
CHUNK = 1 << 20


def short_name(tag: str) -> str:
    """``tag`` without the registry Podman puts in front (``localhost/``, ``docker.io/``) (pure function)."""
    for prefix in PREFIXES:
        if tag.startswith(prefix):
            return tag[len(prefix) :]
    return tag


def export_images(tags: list[str], out: Path) -> int:
    """Write the archive of ``tags`` to ``out`` (whole or not at all); returns its size in bytes."""
    if not tags:
        raise ConfigError("images export: name at least one image tag")
    missing = [tag for tag in tags if not image_exists(tag)]
    if missing:
        raise ImageNotFound(
            f"images export: {', '.join(missing)} not in the engine; build or import them first"
        )
    api = docker_client().api
    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as handle:
            for chunk in _archive(api, tags):
                handle.write(chunk)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out.stat().st_size


def _archive(api, tags: list[str]) -> Iterator[bytes]:
    response = api._get(api._url("/images/get"), params={"names": tags}, stream=True)
    api._raise_for_status(response)
    yield from response.iter_content(CHUNK)


def import_images(archive: Path) -> list[str]:
    """Load ``archive`` into the engine; every image also answers to its short name. Returns the short names."""
    if not archive.is_file():
        raise ConfigError(f"images import: {archive} is not a file; write one with `swe-srl images export`")
    client = docker_client()
    with open(archive, "rb") as handle:
        try:
            tags = _load(client, handle)
        except docker.errors.APIError as exc:
            raise ConfigError(
                f"images import: the engine could not load {archive}: {exc.explanation}"
            ) from None
    names = []
    for tag in tags:
        short = short_name(tag)
        if not image_exists(short):
            repo, _, version = short.rpartition(":")
            client.images.get(tag).tag(repo, version)
        names.append(short)
    return names


def _load(client, handle) -> list[str]:
    """The tags loaded from ``handle``. Podman's Docker-compatible load fails on an archive of several images
    (podman 4.3: "normalizing name for compat API"), so Podman gets its own endpoint."""
    if engine_name() == "docker":
        return [tag for image in client.images.load(handle) for tag in image.tags]
    api = client.api
    response = api._post(
        api._url("/libpod/images/load"), data=handle, headers={"Content-Type": "application/x-tar"}
    )
    return list(api._result(response, True).get("Names") or [])
