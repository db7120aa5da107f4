"""Infra commands: ``setup`` (engine + base images), ``janitor`` (reap orphan containers, stop the Podman service),
``images base|export|import`` (``images build`` is in tasks.py; app.py's registry makes them one group)."""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.console import Console

from swe_srl.errors import ConfigError
from swe_srl.infra import engine, podman
from swe_srl.infra.engine import ENGINE_ENV, ENGINES, ensure_debootstrap, ensure_engine
from swe_srl.infra.image_transfer import export_images, import_images
from swe_srl.infra.images import ensure_base_image, resolve_source
from swe_srl.infra.official import official_image_name
from swe_srl.infra.sandbox import enforcement
from swe_srl.infra.sandbox.janitor import reap
from swe_srl.infra.sources import SOURCES, check_source, probe_image

IMAGE_SOURCE_HELP = (
    "where instance images come from: auto (default: the official image if here or pullable, else "
    "python:X.Y-slim if pullable, else debootstrap) | swebench (official prebuilt images) | registry "
    "(python:X.Y-slim, the spec's X.Y) | debootstrap (offline); or $SWE_SRL_IMAGE_SOURCE"
)
REGISTRY_CHECK = "django__django-11099"
"""An instance whose official image ``setup --source swebench`` asks the registry about."""


def setup(
    python: list[str] = typer.Option(
        ["3.11", "3.9"], "--python", help="Base images to build (3.9, 3.11, 3.13)."
    ),
    with_313: bool = typer.Option(
        False, "--with-3.13", help="Also build the Python 3.13 (trixie) base image."
    ),
    source: str = typer.Option("auto", help=f"Image source: {' | '.join(SOURCES)} (swebench: official images "
                               "are pulled per instance on first use; the base images are still built for tasks "
                               "without one, e.g. the bundled suite)."),
    engine_name: str = typer.Option("", "--engine", help=f"Container engine: {' | '.join(ENGINES)} (default: "
                                    f"${ENGINE_ENV}, else docker). podman: installs it (root, apt) and starts its "
                                    "API service on a socket of this user's; prints the DOCKER_HOST to export."),
    images: bool = typer.Option(True, "--images/--no-images", help="Build the base images (--no-images: only "
                                "install and start the engine)."),
    stop: bool = typer.Option(False, "--stop", help="Stop the Podman service swe-srl started, and exit."),
) -> None:  # fmt: skip
    """Install/start the container engine if needed (Docker; --engine podman: Podman) and build the base images."""

    check_source(source)
    console = Console(stderr=True)
    if stop:
        console.print(podman.stop_service())
        return
    _ensure(engine_name, console)
    if not images:
        return
    if source == "swebench":
        found, what = probe_image(official_image_name(REGISTRY_CHECK))
        console.print(f"[{'green' if found else 'yellow'}]official images:[/] {REGISTRY_CHECK}: {what}")
        source = "auto"
    if source in ("auto", "debootstrap"):
        ensure_debootstrap(console)
    versions = [*python, *(["3.13"] if with_313 and "3.13" not in python else [])]
    for version in versions:
        console.print(
            f"[green]base {version} ({resolve_source(source, version)}):[/] {ensure_base_image(version, source=source, console=console)}"
        )
    console.print("[bold green]setup done[/]")


def _ensure(name: str, console: Console) -> None:
    """Start the chosen engine. Podman: the service at ``$DOCKER_HOST`` when one is given, else swe-srl's own
    (installed and started); this process uses it from here on, its limits are checked and its shell line printed."""
    name = name.strip().lower() or engine.chosen_engine() or "docker"
    if name not in ENGINES:
        raise ConfigError(f"--engine {name!r}: choose one of {', '.join(ENGINES)}")
    if name == "docker":
        console.print(f"[green]engine:[/] {ensure_engine(console)}")
        return
    with podman.stopped_if_refused(console):  # a refused start leaves no service or pause process running
        if os.environ.get("DOCKER_HOST"):
            console.print(f"[green]engine:[/] Podman at {os.environ['DOCKER_HOST']}")
        else:
            console.print(f"[green]engine:[/] {podman.ensure_podman(console)}")
        engine.use_engine("podman", os.environ.get("DOCKER_HOST") or podman.service_url() or "")
        facts = enforcement.engine_facts()
        console.print(f"[green]limits:[/] {', '.join(facts.controllers) or 'none'} enforced ({facts.engine}, "
                      f"{'rootless' if facts.rootless else 'root'}, cgroup {facts.cgroup_version})")  # fmt: skip
        enforcement.require_enforced()
    if note := enforcement.unlimited_note(facts):
        console.print(f"[yellow]warning:[/] {note}")
    exports = podman.service_env(os.environ["DOCKER_HOST"])
    typer.echo("export " + " ".join(f"{key}={value}" for key, value in exports.items()))


def ensure_checked(name: str, console: Console) -> None:
    """Setup's engine checks for a sandbox node (``swe-srl worker``): the chosen engine started and answering, its
    memory/pids limits enforced (``LimitsUnenforced`` otherwise, unless ``--allow-unlimited-sandboxes``)."""
    _ensure(name, console)
    facts = enforcement.engine_facts()
    console.print(f"[green]limits:[/] {', '.join(facts.controllers) or 'none'} enforced ({facts.engine})")
    enforcement.require_enforced(facts)


def janitor(
    everything: bool = typer.Option(
        False, "--all", help="Remove every swe-srl container, live runs included."
    ),
    older_than: float | None = typer.Option(
        None, "--older-than", help="Also remove containers older than H hours."
    ),
    stop_engine: bool = typer.Option(
        False, "--engine", help="Then stop the Podman service swe-srl started (setup --engine podman)."
    ),
) -> None:
    """Remove swe-srl containers whose run's process is gone (same host), or older than --older-than hours."""

    url = podman.service_url() if stop_engine else None
    if url:  # reap on the service about to stop, whatever this shell points at
        engine.use_engine("podman", url)
    if not stop_engine or url:
        reaped = reap(older_than_h=older_than, everything=everything)
        for item in reaped:
            typer.echo(f"removed {item.name} ({item.container_id[:12]}): {item.reason}")
        typer.echo(f"{len(reaped)} container(s) removed")
    if stop_engine:
        typer.echo(podman.stop_service())


def images_base(
    python: list[str] = typer.Option(["3.11"], "--python", help="Python version(s): 3.9, 3.11, 3.13."),
    source: str = typer.Option("auto", help="auto | debootstrap | registry (or SWE_SRL_BASE_SOURCE)."),
) -> None:
    """Build (or reuse) the base image(s) and print their tags."""

    for version in python:
        typer.echo(ensure_base_image(version, source=source, console=Console(stderr=True)))


def images_export(
    tags: list[str] = typer.Argument(
        ..., help="Image tags to write (e.g. the output of `swe-srl images base`)."
    ),
    out: Path = typer.Option(
        ..., "-o", "--output", help="The archive to write (a tar, as `docker save` writes)."
    ),
) -> None:
    """Write images to a tar file (docker save), to load on another engine or node without a registry."""
    size = export_images(tags, out)
    typer.echo(f"wrote {len(tags)} image(s) to {out} ({size / 2**20:.0f} MiB)")


def images_import(
    archive: Path = typer.Argument(..., help="A tar written by `swe-srl images export` or `docker save`."),
) -> None:
    """Load images from a tar file (podman/docker load); each answers to its short name (swe-srl/base:...)."""
    for name in import_images(archive):
        typer.echo(f"loaded {name}")
