"""The ``swe-srl`` command line: one Typer app; each area registers its commands from ``swe_srl/commands/``."""

from __future__ import annotations

import importlib
import sys

import typer
from rich.console import Console

from swe_srl.errors import SweSrlError

app = typer.Typer(
    name="swe-srl",
    help="Train and evaluate software-engineering agents with Supervised Reinforcement Learning.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Each module defines register(app); heavy imports stay inside the command functions.
COMMAND_MODULES = ("infra", "tasks", "rewards", "trajectories", "expert", "env", "train", "evaluate")


def _register_all() -> None:
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"swe_srl.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"swe_srl.commands.{name}":
                raise
            continue
        module.register(app)


_register_all()


def main() -> None:
    """Entry point: ``SweSrlError`` becomes a one-line message and exit code 2, not a traceback."""
    from swe_srl.sandbox.janitor import install_sigterm_handler

    install_sigterm_handler()  # SIGTERM → SystemExit, so live sandboxes are closed by atexit
    try:
        app()
    except SweSrlError as exc:
        Console(stderr=True).print(f"[bold red]error:[/] {exc}", highlight=False)
        sys.exit(2)
    except KeyboardInterrupt:
        Console(stderr=True).print("[yellow]interrupted[/]")
        sys.exit(130)


if __name__ == "__main__":
    main()
