"""``swe-srl worker``: this machine as a sandbox node of a Ray cluster (docs/cluster.md)."""

from __future__ import annotations

import typer
from rich.console import Console

from swe_srl.cli.infra import ensure_checked
from swe_srl.infra.sandbox.janitor import reap
from swe_srl.infra.sandbox.nodes import start_node, stop_node
from swe_srl.infra.sandbox.placement import SANDBOX_RESOURCE


def worker(
    sandboxes: int = typer.Option(0, "--sandboxes", min=0, metavar="N", help="Sandbox slots this node offers (the "
                                  f"Ray resource {SANDBOX_RESOURCE}); each sandbox gets its own Limits (1 CPU, 2g "
                                  "by default): size N by the node's cores and memory."),
    address: str | None = typer.Option(None, "--address", metavar="HEAD", help="Join the cluster whose head is at "
                                       "HOST:PORT; none: start a head node here on --port."),
    port: int = typer.Option(6379, "--port", help="The head's port (without --address)."),
    cpus: int | None = typer.Option(None, "--cpus", min=0, help="CPUs the node declares to Ray (default: all)."),
    engine_name: str = typer.Option("", "--engine", help="docker | podman (default: $SWE_SRL_ENGINE, else docker)."),
    stop: bool = typer.Option(False, "--stop", help="End the Ray processes `swe-srl worker` started here, then remove the "
                              "containers its sandboxes left, and exit."),
) -> None:  # fmt: skip
    """Join a Ray cluster as a sandbox node (or start its head): engine and limits checked first, as setup does."""

    console = Console(stderr=True)
    if stop:
        typer.echo(stop_node())
        typer.echo(f"{len(reap())} container(s) removed")
        return
    if sandboxes < 1:
        raise typer.BadParameter(
            "give the node's sandbox slots, e.g. --sandboxes 8", param_hint="--sandboxes"
        )
    ensure_checked(engine_name, console)  # a node that would refuse its sandboxes never joins
    head = start_node(sandboxes, address, port, cpus)
    typer.echo(f"swe-srl worker ready: {sandboxes} sandbox slot(s) on this node of the Ray cluster at {head}; "
               f"drivers use --sandboxes ray:{head}; stop with `swe-srl worker --stop`")  # fmt: skip
