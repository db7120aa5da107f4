"""The ``swe-srl`` command line: one Typer app whose commands are imported when they run.

:data:`COMMANDS` names every command, its help line and where it lives; ``swe-srl --help`` lists them without
importing any, and a command imports only its own module (``reward`` needs neither Docker nor the training stack).
"""

from __future__ import annotations

import os
import sys

import typer
from rich.console import Console

from swe_srl.cli.lazy import Lazy, LazyGroup
from swe_srl.errors import SweSrlError
from swe_srl.infra.sandbox.base import ALLOW_UNLIMITED_ENV
from swe_srl.infra.sandbox.signals import install_sigterm_handler

COMMANDS = {
    "setup": Lazy(
        "Install/start the container engine if needed (Docker; --engine podman: Podman) and build the base images.",
        "swe_srl.cli.infra:setup",
    ),
    "janitor": Lazy(
        "Remove swe-srl containers whose run's process is gone (same host), or older than --older-than hours.",
        "swe_srl.cli.infra:janitor",
    ),
    "worker": Lazy(
        "Join a Ray cluster as a sandbox node (or start its head): engine and limits checked first, as setup does.",
        "swe_srl.cli.worker:worker",
    ),
    "reward": Lazy(
        "Score an action against the expert action and print the total and every component.",
        "swe_srl.cli.rewards:reward",
    ),
    "decompose": Lazy(
        "Split expert trajectories into SRL step samples (prompt → expert action).",
        "swe_srl.cli.trajectories:decompose_cmd",
    ),
    "replay": Lazy(
        "Replay trajectories in the sandbox: exit codes, self-rewards, observation matches.",
        "swe_srl.cli.expert:replay_cmd",
    ),
    "shell": Lazy(
        "Interactive bash in the episode's container; the container is removed on exit or Ctrl-C.",
        "swe_srl.cli.expert:shell_cmd",
    ),
    "train": Lazy(
        "Train a policy with SRL on expert step samples (TRL GRPO + dynamic sampling).",
        "swe_srl.cli.train:train",
    ),
    "eval": Lazy(
        "Run POLICY on every instance of DATASET under PROTOCOL and grade the patches SWE-bench style.",
        "swe_srl.cli.evaluate:eval_cmd",
    ),
    "images": Lazy(
        "Build images (base → env → instance).",
        {
            "base": Lazy(
                "Build (or reuse) the base image(s) and print their tags.", "swe_srl.cli.infra:images_base"
            ),
            "export": Lazy(
                "Write images to a tar file (docker save), to load on another engine or node without a registry.",
                "swe_srl.cli.infra:images_export",
            ),
            "import": Lazy(
                "Load images from a tar file (podman/docker load); each answers to its short name (swe-srl/base:...).",
                "swe_srl.cli.infra:images_import",
            ),
            "build": Lazy(
                "Build (or pull, for official images) the instance images of every instance of DATASET.",
                "swe_srl.cli.tasks:images_build_cmd",
            ),
        },
    ),
    "tasks": Lazy("Task datasets: the bundled suite, synthesis, validation.", "swe_srl.cli.tasks:tasks_app"),
    "trajectories": Lazy(
        "Expert trajectories: import public formats.", "swe_srl.cli.trajectories:trajectories_app"
    ),
    "expert": Lazy(
        "Scripted expert trajectories on tasks with a gold patch.", "swe_srl.cli.expert:expert_app"
    ),
    "env": Lazy("The Gymnasium environment (SweSrl-v0).", "swe_srl.cli.env:env_app"),
    "view": Lazy(
        "Look at a run in the browser: an eval run, a training run, trajectories or samples.",
        "swe_srl.cli.view:view_cmd",
    ),
}
"""Every command: its help line (``--help`` shows it; tests/unit/test_cli_lazy.py checks it is the command's own)
and ``module:attribute``, or the registry of a group spread over several modules."""


class Commands(LazyGroup):
    lazy = COMMANDS


app = typer.Typer(
    name="swe-srl",
    cls=Commands,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(
    allow_unlimited: bool = typer.Option(
        False,
        "--allow-unlimited-sandboxes",
        help="Run sandboxes even where the engine cannot enforce their memory/pids limits (rootless Podman on "
        "cgroup v1); refused otherwise. Reports and records then say so.",
    ),
) -> None:
    """Train and evaluate software-engineering agents with Supervised Reinforcement Learning."""
    if allow_unlimited:
        os.environ[ALLOW_UNLIMITED_ENV] = "1"  # worker processes inherit it


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
