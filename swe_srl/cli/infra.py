"""Infra commands: ``setup`` (engine + base images), ``janitor`` (reap orphan containers), ``images base``
(``images build`` is in tasks.py; app.py's registry makes them one group)."""

from __future__ import annotations

import typer
from rich.console import Console

from swe_srl.infra.engine import ensure_debootstrap, ensure_engine
from swe_srl.infra.images import ensure_base_image, resolve_source
from swe_srl.infra.official import official_image_name
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
) -> None:  # fmt: skip
    """Install/start the Docker engine if needed (root on Linux) and build the base images. Idempotent."""

    check_source(source)
    console = Console(stderr=True)
    console.print(f"[green]engine:[/] {ensure_engine(console)}")
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


def janitor(
    everything: bool = typer.Option(
        False, "--all", help="Remove every swe-srl container, live runs included."
    ),
    older_than: float | None = typer.Option(
        None, "--older-than", help="Also remove containers older than H hours."
    ),
) -> None:
    """Remove swe-srl containers whose run's process is gone (same host), or older than --older-than hours."""

    reaped = reap(older_than_h=older_than, everything=everything)
    for item in reaped:
        typer.echo(f"removed {item.name} ({item.container_id[:12]}): {item.reason}")
    typer.echo(f"{len(reaped)} container(s) removed")


def images_base(
    python: list[str] = typer.Option(["3.11"], "--python", help="Python version(s): 3.9, 3.11, 3.13."),
    source: str = typer.Option("auto", help="auto | debootstrap | registry (or SWE_SRL_BASE_SOURCE)."),
) -> None:
    """Build (or reuse) the base image(s) and print their tags."""

    for version in python:
        typer.echo(ensure_base_image(version, source=source, console=Console(stderr=True)))
