"""CLI: ``swe-srl env demo`` — one scripted episode of the Gymnasium environment, printed step by step."""

from __future__ import annotations

from pathlib import Path

import gymnasium
import typer
from rich.console import Console

import swe_srl.env  # noqa: F401 - registers SweSrl-v0
from swe_srl.agent.episode import AgentConfig, Episode, StepRecord
from swe_srl.agent.loop import run_episode
from swe_srl.agent.policies import ScriptedPolicy, gold_patch_outputs
from swe_srl.benchmark.instances import load_instances
from swe_srl.infra.sandbox.placement import SANDBOXES_HELP, select_sandboxes
from swe_srl.infra.sandbox.remote import ensure_reachable

env_app = typer.Typer(help="The Gymnasium environment (SweSrl-v0).", no_args_is_help=True)


@env_app.command("demo")
def demo(
    instance_id: str | None = typer.Option(None, "--instance", help="Task to run (default: the first one)."),
    dataset: str = typer.Option("bundled", help="Dataset holding the task (bundled, a JSONL, a HF id)."),
    repos_dir: Path | None = typer.Option(None, help="Local clones of the task repositories."),
    show_chars: int = typer.Option(600, help="Characters of each observation to print."),
    sandboxes: str | None = typer.Option(None, "--sandboxes", metavar="WHERE", help=SANDBOXES_HELP),
) -> None:
    """Fix a task with its gold patch (heredoc + git apply), run pytest, submit: prints every step and reward."""

    select_sandboxes(sandboxes)
    ensure_reachable()
    console = Console()
    instances = load_instances(dataset)
    instance = (
        next((i for i in instances if i.instance_id == instance_id), None) if instance_id else instances[0]
    )
    if instance is None:
        raise typer.BadParameter(
            f"instance {instance_id!r} is not in dataset {dataset!r}", param_hint="--instance"
        )

    def show(episode: Episode, record: StepRecord) -> None:
        action = record.info["action"] or "(format error)"
        t = len(episode.steps) - 1
        console.rule(f"step {t}  reward={record.reward:g}  exit={record.info['exit_code']}")
        console.print(f"[bold]$ {action[:show_chars]}[/]", highlight=False)
        console.print(record.observation[-show_chars:], highlight=False, markup=False)

    env = gymnasium.make(
        "SweSrl-v0", dataset=dataset, instances=instances, repos_dir=repos_dir and str(repos_dir)
    )
    try:
        console.print(f"[bold]instance[/] {instance.instance_id} ({instance.repo})")
        policy = ScriptedPolicy(gold_patch_outputs(instance.patch), name="gold-demo")
        config = AgentConfig(max_steps=None, episode_timeout_s=None, submit_to_env=True)  # the env's limits
        result = run_episode(env, policy, instance, config, on_step=show)
    finally:
        env.close()
    state = "terminated" if result.terminated else "truncated" if result.truncated else result.exit_reason
    console.print(f"[bold]episode {state}[/]: {len(result.steps)} steps, return {result.total_reward:g}")
    if result.error:
        console.print(f"{result.exit_reason}: {result.error}", style="red", highlight=False, markup=False)
        raise typer.Exit(1)
