"""CLI: ``swe-srl train`` — SRL (then optional RLVR) training with TRL GRPO."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from swe_srl.agent.policies import check_model_ref
from swe_srl.infra.sandbox.placement import SANDBOXES_HELP
from swe_srl.train.config import load_config
from swe_srl.train.preflight import dry_run as print_plan
from swe_srl.train.preflight import gpu_config


def train(
    oracle_files: bool = typer.Option(False, "--oracle-files", help="Prompts include the oracle files."),
    model: str | None = typer.Option(
        None, "--model", help="tiny (the default: the embedded CPU demo model), or an HF id or path."
    ),
    samples: Path | None = typer.Option(None, "--samples", help="Step samples JSONL (swe-srl decompose)."),
    trajectories: list[str] | None = typer.Option(None, "--trajectories", help="Trajectory files / HF ids."),
    tasks: str | None = typer.Option(None, "--tasks", help="Task set (oracle files, RLVR episodes)."),
    repos_dir: Path | None = typer.Option(
        None,
        "--repos-dir",
        help="Folder of local clones (offline): the task set's repositories for oracle files, the effect layer "
        "and RLVR episodes.",
    ),
    reward: str | None = typer.Option(
        None, "--reward", help="srl (similarity), layered, or mixed (their mean)."
    ),
    effect: str | None = typer.Option(None, "--effect", help="Effect layer: off, cached or full."),
    sandboxes: str | None = typer.Option(None, "--sandboxes", metavar="WHERE", help=SANDBOXES_HELP),
    preset: str | None = typer.Option(
        None,
        "--preset",
        help="Starting config (default: the start's own: cpu-tiny for tiny, paper for a real model): cpu-tiny, "
        "cpu-small (--model PATH on CPU), paper, paper-lora.",
    ),
    config: Path | None = typer.Option(None, "--config", help="YAML config file (over the preset)."),
    overrides: list[str] | None = typer.Option(None, "--set", help="Dotted override, e.g. trl.beta=0."),
    output: str | None = typer.Option(None, "--output", "-o", help="Output directory."),
    max_steps: int | None = typer.Option(None, "--max-steps", help="Stop after N optimizer steps."),
    resume: bool = typer.Option(False, "--resume", help="Resume from the last checkpoint in --output."),
    lora: bool = typer.Option(False, "--lora", help="Train LoRA adapters (peft)."),
    stage: str | None = typer.Option(None, "--stage", help="srl or rlvr."),
    method: str | None = typer.Option(
        None,
        "--method",
        help="srl, or sft: the supervised baseline (same start, data, steps, learning rate).",
    ),
    seeds: int = typer.Option(
        0,
        "--seeds",
        min=0,
        help="Run N times with seeds 0..N-1 into OUTPUT/seed-K; OUTPUT/seeds.json aggregates.",
    ),
    init: str | None = typer.Option(
        None, "--init", help="Checkpoint to start from (rlvr: the SRL model); its defaults follow what it is."
    ),
    allow_eval_instances: bool = typer.Option(
        False, "--allow-eval-instances", help="Train on SWE-bench Verified/Lite/test instances anyway."
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Write OUTPUT/config.yaml and print the per-GPU memory plan; load nothing."
    ),
    gpus: int = typer.Option(1, "--gpus", min=1, help="--dry-run: GPUs (processes) the run will use."),
    gpu_memory: float = typer.Option(
        80.0, "--gpu-memory", help="--dry-run: each card's memory in GiB, as nvidia-smi reports it."
    ),
) -> None:
    """Train a policy with SRL on expert step samples (TRL GRPO + dynamic sampling)."""

    if model and model != "tiny":  # before the training stack loads: one line, not a transformers traceback
        check_model_ref(model, "--model")
    from swe_srl.train.launch import run_method, run_seeds  # the training stack: torch, transformers, trl

    sets = list(overrides or [])
    sets += [f"trl.max_steps={max_steps}"] if max_steps is not None else []
    sets += ["lora.enabled=true"] if lora else []
    values = dict(
        preset=preset,
        oracle_files=oracle_files or None,
        model=model,
        samples=str(samples) if samples else None,
        trajectories=trajectories or None,
        tasks=tasks,
        repos_dir=str(repos_dir) if repos_dir else None,
        reward=reward,
        effect=effect,
        sandboxes=sandboxes,
        output=output,
        resume=resume or None,
        stage=stage,
        method=method,
        init=init,
        allow_eval_instances=allow_eval_instances or None,
    )
    if dry_run:  # the plan for the GPUs: config.json only, no weights, tokenizer or data
        raise typer.Exit(print_plan(gpu_config(config, sets, values), gpus, gpu_memory, Console()))
    cfg = load_config(config, sets, **values)
    console = Console()
    if seeds:
        record = run_seeds(cfg, seeds, console=console)
        console.print(seeds_table(record["over_seeds"], f"{seeds} seeds of --method {cfg.method}"))
        names = ["seeds.json", *(f"seed-{k}" for k in range(seeds))]
        console.print(outputs_line(cfg.output_dir, names), highlight=False, soft_wrap=True)
        return
    summary = run_method(cfg, console=console)
    for line in verdict_lines(summary):
        console.print(line, highlight=False)
    console.print(outputs_line(cfg.output_dir, OUTPUTS), highlight=False, soft_wrap=True)


OUTPUTS = ("summary.json", "metrics.jsonl", "heldout.jsonl", "training_curves.png", "final/README.md")
"""What a run may write into its output folder (the last line names those that exist)."""


def outputs_line(folder: Path, names: Sequence[str]) -> str:
    """``outputs: FOLDER (the named files that exist)``: the last line a run prints."""
    found = [name for name in names if (folder / name).exists()]
    labels = ["model card (final/README.md)" if name == "final/README.md" else name for name in found]
    return f"outputs: {folder}" + (f" ({', '.join(labels)})" if labels else "")


def verdict_lines(summary: dict[str, Any]) -> list[str]:
    """The run's result in one or two lines: the reward's (or SFT loss's) first → last fifth, held-out evals."""
    wall = f" in {summary.get('wall_time_s', float('nan')):.0f}s"
    if summary.get("stage") == "rlvr":
        return [f"RLVR: {summary['episodes']} episodes, mean outcome reward "
                f"{summary['mean_outcome_reward']:.3f}{wall}"]  # fmt: skip
    if summary.get("method") == "sft":
        first, last = summary["loss_first_fifth"], summary["loss_last_fifth"]
        return [f"SFT loss {first:.3f} → {last:.3f} (first → last fifth of {summary['steps']} steps){wall}"]
    verdict = "rose" if summary.get("reward_rose") else "did NOT rise"
    lines = [
        f"mean reward {verdict}: first fifth {summary.get('reward_first_fifth', float('nan')):+.3f} → "
        f"last fifth {summary.get('reward_last_fifth', float('nan')):+.3f}{wall}"
    ]
    evals = summary.get("eval") or []
    if len(evals) >= 2:
        first, last = evals[0], evals[-1]
        lines.append(
            f"held-out greedy reward: {first['mean_reward']:+.3f} at step {first['step']} → "
            f"{last['mean_reward']:+.3f} at step {last['step']}"
        )
    return lines


def seeds_table(over_seeds: dict[str, dict[str, dict[str, float]]], title: str) -> Table:
    """Held-out means over the seeds: one row per policy, mean ± std under each reward."""
    rewards = list(next(iter(over_seeds.values()), {}))
    table = Table(title=f"held-out mean ± std over {title}")
    table.add_column("policy")
    for reward in rewards:
        table.add_column(reward, justify="right")
    for name, cells in over_seeds.items():
        table.add_row(name, *(f"{cells[r]['mean']:+.3f} ± {cells[r]['std']:.3f}" for r in rewards))
    return table
