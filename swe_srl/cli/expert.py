"""CLI: ``swe-srl expert generate``, ``swe-srl replay TRAJ``, ``swe-srl shell INSTANCE``."""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.console import Console

from swe_srl.benchmark.instances import load_instances, select_instances
from swe_srl.cli.infra import IMAGE_SOURCE_HELP
from swe_srl.core.shells import PER_ACTION, check_shell
from swe_srl.env.debug_shell import open_shell
from swe_srl.errors import ConfigError, TaskError, TrajectoryFormatError
from swe_srl.eval.replay import render_table, replay, replay_rows_text
from swe_srl.infra.executor import Task, make_executor
from swe_srl.infra.sandbox.placement import SANDBOXES_ENV, SANDBOXES_HELP, sandbox_address, select_sandboxes
from swe_srl.infra.sandbox.remote import ensure_reachable
from swe_srl.infra.sources import select_image_source
from swe_srl.paths import atomic_write_text
from swe_srl.trajectories.importers import import_trajectories
from swe_srl.trajectories.schema import write_jsonl
from swe_srl.trajectories.scripted import scripted_trajectories

expert_app = typer.Typer(
    help="Scripted expert trajectories on tasks with a gold patch.", no_args_is_help=True
)


def _instance(dataset: str, instance_id: str):

    for instance in load_instances(dataset):
        if instance.instance_id == instance_id:
            return instance
    raise TaskError(
        f"instance {instance_id!r} is not in dataset {dataset!r}; list them with `swe-srl tasks list`"
    )


def _trajectory(path: str, index: int | None, instance_id: str | None):

    trajs = import_trajectories(path)
    picked = [t for t in trajs if instance_id is None or t.instance_id == instance_id]
    if not picked:
        raise TrajectoryFormatError(f"{path}: no trajectory{f' for {instance_id!r}' if instance_id else ''}")
    if index is not None and not 0 <= index < len(picked):
        raise TrajectoryFormatError(f"{path}: --index {index} out of range (0..{len(picked) - 1})")
    return [picked[index]] if index is not None else picked


@expert_app.command("generate")
def generate(
    output: Path = typer.Option(..., "-o", "--output", help="Native trajectory JSONL to write."),
    dataset: str = typer.Option(
        "bundled:train", help="Tasks with gold patches (bundled:train, a JSONL, ...)."
    ),
    instances: str = typer.Option(
        "", "--instances", metavar="IDS", help="Only these instance ids (comma-separated)."
    ),
    seed: int = typer.Option(0, help="Seed choosing commands and wording (deterministic)."),
    repos_dir: Path | None = typer.Option(None, help="Local clones of the task repositories."),
    ray: str | None = typer.Option(None, "--ray", help="Run on Ray: 'auto' or 'ray://host:10001'."),
    workers: int = typer.Option(1, help="Parallel tasks: local processes, or Ray tasks (0 = cluster CPUs)."),
    shell: str = typer.Option(
        "persistent",
        help="persistent | per-action (each command a fresh bash from /testbed, as mini-swe-agent).",
    ),
    sandboxes: str | None = typer.Option(None, "--sandboxes", metavar="WHERE", help=SANDBOXES_HELP),
) -> None:
    """Run the scripted expert on every task; keep the trajectories that resolve it."""
    shell = check_shell(shell, "--shell")

    select_sandboxes(sandboxes)
    ensure_reachable()
    instances = select_instances(
        load_instances(dataset), [i.strip() for i in instances.split(",") if i.strip()]
    )
    if ray or workers > 1:  # one task per instance; per-instance seeds: same result as sequential
        kwargs = {"seed": seed, "repos_dir": repos_dir, "progress": False, "shell": shell}
        tasks = [Task(i.instance_id, scripted_trajectories, ([i],), kwargs) for i in instances]
        with make_executor(ray, workers) as executor:
            trajs = [t for found in executor.map(tasks, progress=True).values() for t in found]
    else:
        trajs = scripted_trajectories(instances, seed=seed, repos_dir=repos_dir, shell=shell)
    write_jsonl(output, trajs)
    how = " (each command a fresh bash: per-action)" if shell == PER_ACTION else ""
    steps = sum(len(t.steps) for t in trajs)
    typer.echo(f"{len(trajs)}/{len(instances)} tasks resolved; {steps} steps{how} → {output}")


def replay_cmd(
    traj: str = typer.Argument(..., help="Trajectory file (native JSONL or any importable format)."),
    dataset: str = typer.Option("bundled", help="Dataset holding the trajectory's instance."),
    index: int | None = typer.Option(None, help="Replay only the trajectory at this index."),
    instance_id: str | None = typer.Option(
        None, "--instance", help="Replay only trajectories of this instance."
    ),
    repos_dir: Path | None = typer.Option(None, help="Local clones of the task repositories."),
    out: Path | None = typer.Option(
        None, "--out", help="Also write each replayed step as a JSON line (for `swe-srl view --replay`)."
    ),
    sandboxes: str | None = typer.Option(None, "--sandboxes", metavar="WHERE", help=SANDBOXES_HELP),
) -> None:
    """Replay trajectories in the sandbox: exit codes, self-rewards, observation matches."""

    select_sandboxes(sandboxes)
    ensure_reachable()
    console, lines = Console(), []
    for trajectory in _trajectory(traj, index, instance_id):
        rows = replay(trajectory, _instance(dataset, trajectory.instance_id), repos_dir=repos_dir)
        console.print(render_table(trajectory, rows, width=console.width))
        lines.append(replay_rows_text(trajectory, rows))
        if out is not None:
            atomic_write_text(out, "".join(lines))


def shell_cmd(
    instance_id: str = typer.Argument(..., help="Instance to open a shell on."),
    dataset: str = typer.Option("bundled", help="Dataset holding the instance."),
    trajectory: str | None = typer.Option(None, help="Expert trajectory file (for --step)."),
    step: int | None = typer.Option(None, help="Start at the expert state before this step (0-based)."),
    repos_dir: Path | None = typer.Option(None, help="Local clones of the task repositories."),
    image_source: str | None = typer.Option(None, "--image-source", help=IMAGE_SOURCE_HELP),
) -> None:
    """Interactive bash in the episode's container; the container is removed on exit or Ctrl-C."""

    if sandbox_address() is not None:  # the terminal attaches to a container of this machine's engine
        raise ConfigError(f"swe-srl shell runs its container here: unset ${SANDBOXES_ENV} (it says "
                          f"{os.environ[SANDBOXES_ENV]!r}) or set it to local")  # fmt: skip
    select_image_source(image_source)
    traj = _trajectory(trajectory, None, instance_id)[0] if trajectory else None
    code = open_shell(_instance(dataset, instance_id), trajectory=traj, step=step, repos_dir=repos_dir)
    raise typer.Exit(code)
