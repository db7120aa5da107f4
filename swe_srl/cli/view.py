"""CLI: ``swe-srl view PATH`` — a local web viewer of an eval run, a training run, trajectories or samples."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.progress import Progress

from swe_srl.view.open import open_site
from swe_srl.view.server import export, serve


def view_cmd(
    path: Path = typer.Argument(
        ...,
        help="An eval run folder, a training run folder (or --seeds folder), a trajectories or samples file.",
    ),
    port: int = typer.Option(8000, help="Port to serve on (0: any free port)."),
    host: str = typer.Option("127.0.0.1", help="Address to bind; anything but 127.0.0.1 exposes the runs."),
    export_dir: Path | None = typer.Option(
        None,
        "--export",
        help="Write a static site into this folder (open DIR/index.html) instead of serving.",
    ),
    trajectories: Path | None = typer.Option(None, help="A trajectories file to link instance ids to."),
    samples: Path | None = typer.Option(None, help="A samples file to link instance ids to."),
    train: Path | None = typer.Option(
        None, help="A training run whose held-out rows to link instance ids to."
    ),
    replay: Path | None = typer.Option(None, help="Per-step rewards written by `swe-srl replay --out`."),
    dataset: str | None = typer.Option(
        None, help="An eval run's dataset (FAIL_TO_PASS/PASS_TO_PASS, problems); default: the one it names."
    ),
) -> None:
    """Look at a run in the browser: an eval run, a training run, trajectories or samples."""

    console = Console()
    site = open_site(
        path, trajectories=trajectories, samples=samples, train=train, replay=replay, dataset=dataset
    )
    if export_dir is None:
        serve(site, host, port, say=lambda line: console.print(line, highlight=False, soft_wrap=True))
        return
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("writing pages", total=None)
        pages = export(site, export_dir, lambda n, total: progress.update(task, completed=n, total=total))
    console.print(f"wrote {pages} pages: open {export_dir / 'index.html'}", highlight=False, soft_wrap=True)
