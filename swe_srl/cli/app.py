"""The ``swe-srl`` command line: one Typer app; each area registers its commands from a module beside this one."""

from __future__ import annotations

import sys

import typer
from rich.console import Console

from swe_srl.cli import env, evaluate, expert, infra, rewards, tasks, train, trajectories
from swe_srl.errors import SweSrlError
from swe_srl.infra.sandbox.janitor import install_sigterm_handler

app = typer.Typer(
    name="swe-srl",
    help="Train and evaluate software-engineering agents with Supervised Reinforcement Learning.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for module in (infra, tasks, rewards, trajectories, expert, env, train, evaluate):
    module.register(app)  # each command module adds its commands; heavy imports (torch, trl) stay in them


def main() -> None:
    """Entry point: ``SweSrlError`` becomes a one-line message and exit code 2, not a traceback."""

    install_sigterm_handler()  # SIGTERM → SystemExit, so live sandboxes are closed by atexit
    try:
        app()
    except SweSrlError as exc:
        Console(stderr=True).print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)  # one line
        sys.exit(2)
    except KeyboardInterrupt:
        Console(stderr=True).print("[yellow]interrupted[/]")
        sys.exit(130)


if __name__ == "__main__":
    main()
