"""``--stage rlvr``: GRPO on multi-turn ``SWEEnv`` episodes (outcome reward) from an SRL checkpoint, through TRL's
``rollout_func`` hook and :class:`~swe_srl.train.rlvr.EnvEpisodeRunner`.

The TRL settings come from the start (a tiny checkpoint's are small, so that it runs on CPU:
:data:`swe_srl.train.tiny.preset.TINY_RLVR_TRL_DEFAULTS`); the first ``rlvr.instances`` train instances,
``rlvr.max_turns`` turns of ``rlvr.max_new_tokens`` tokens.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from swe_srl.benchmark.instances import load_instances
from swe_srl.core.prompts import build_messages
from swe_srl.errors import TrainingError
from swe_srl.infra.sandbox.base import Limits
from swe_srl.paths import atomic_write_text
from swe_srl.train.callbacks import MetricsCallback, RichProgressCallback, read_metrics
from swe_srl.train.config import TrainConfig, start_of
from swe_srl.train.data import fill_generation_batch, guard_eval_instances, to_dataset
from swe_srl.train.policy import grpo_args, peft_config, think_prefix
from swe_srl.train.record import write_config
from swe_srl.train.rlvr import (
    EnvEpisodeRunner,
    OutcomeReward,
    hf_generate_batch,
    make_rollout_func,
    prompt_key,
)
from swe_srl.train.trainer import SRLGRPOTrainer
from swe_srl.trajectories.oracle import oracle_contents


class RLVRTrainer(SRLGRPOTrainer):
    """The format metric of an RLVR batch is per model turn (the share of turns that parse), not per transcript:
    a multi-turn transcript as a whole is never one think + action."""

    def on_rewards(self, rewards_per_func: Any, completions: list, mode: str) -> None:
        super().on_rewards(rewards_per_func, completions, mode)
        share = next((f.last_turn_format for f in self.reward_funcs if isinstance(f, OutcomeReward)), None)
        if share is not None:
            self._metrics[mode]["format_compliance"][-1] = share


def rlvr_instances(config: TrainConfig) -> list:
    """The first ``rlvr.instances`` train-split instances of ``--tasks`` (default: the bundled suite)."""

    train = [i for i in load_instances(config.tasks or "bundled") if i.split == "train"]
    if not train:
        raise TrainingError(f"--tasks {config.tasks or 'bundled'}: no instance is in the train split")
    chosen = train[: config.rlvr.instances]
    guard_eval_instances([i.instance_id for i in chosen], config.allow_eval_instances, "RLVR episodes")
    return chosen


def rlvr_eval_instances(config: TrainConfig) -> list:
    """The first ``rlvr.eval_instances`` test-split instances of ``--tasks`` (the split rule), for the held-out
    resolve rate."""

    if not config.rlvr.eval_instances:
        return []
    test = [i for i in load_instances(config.tasks or "bundled") if i.split == "test"]
    return test[: config.rlvr.eval_instances]


def held_out_resolve_rate(
    trainer: Any, runner: EnvEpisodeRunner, instances: list, max_new_tokens: int
) -> dict:
    """Greedy episodes of the trained policy on held-out instances, graded: ``eval/resolve_rate`` and counts."""
    if not instances:
        return {}
    generate = hf_generate_batch(trainer, max_new_tokens, greedy=True)
    rollouts = runner.run_batch([{"instance_id": i.instance_id, "prompt": None} for i in instances], generate)
    resolved = sum(r.reward == 1.0 for r in rollouts)
    return {
        "eval/resolve_rate": resolved / len(rollouts),
        "eval/resolved": resolved,
        "eval/instances": len(rollouts),
        "eval/infra_errors": sum(r.reward is None for r in rollouts),
    }


def rlvr_rows(config: TrainConfig, instances: list) -> list[dict[str, Any]]:
    """One dataset row per instance: the task prompt (as the env renders it) and the instance id."""

    oracle = {}
    if config.oracle_files:
        oracle = oracle_contents(instances, config.repos_path)
    rows = []
    for instance in instances:
        files = oracle.get(instance.instance_id) or None
        prompt = build_messages(instance.problem_statement, [], oracle_files=files, shell=config.rlvr.shell)
        rows.append({"prompt": prompt, "instance_id": instance.instance_id})
    return rows


def rlvr_env_kwargs(config: TrainConfig) -> dict[str, Any]:
    """The ``SWEEnv`` options of the run's episodes: command and episode limits, oracle files, local clones
    (``repos_dir``: the instance images and grading read the repositories from there), the shell."""

    limits = Limits(command_timeout_s=config.rlvr.command_timeout_s, episode_timeout_s=600.0)
    return {"limits": limits, "oracle_files": config.oracle_files, "repos_dir": config.repos_dir,
            "shell": config.rlvr.shell}  # fmt: skip


def refuse_viewed(config: TrainConfig) -> None:
    """RLVR episodes show the policy the sandbox's plain text: an ``--init`` whose view is not plain (the tiny
    model's slots: :mod:`swe_srl.train.tiny.slots`) is refused before any work."""
    from transformers import AutoTokenizer

    if not (config.init and Path(config.init).exists()):
        return
    why = start_of(config).view(AutoTokenizer.from_pretrained(config.init)).refuse_plain_episodes()
    if why:
        raise TrainingError(
            f"--stage rlvr: --init {config.init}: {why}, but RLVR episodes show it plain text; start RLVR from a "
            "checkpoint trained with tiny.slots=false"
        )


def _trainer(config: TrainConfig, rows: list[dict[str, Any]], runner_factory, console):
    from transformers import AutoTokenizer, PrinterCallback

    model_path = start_of(config).model_path(config, rows)
    args = grpo_args(config)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    prefix = think_prefix(tokenizer)
    runner = runner_factory(tokenizer, prefix)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    trainer = RLVRTrainer(
        model=model_path,
        reward_funcs=[OutcomeReward()],
        args=args,
        train_dataset=to_dataset(fill_generation_batch(rows, args)),
        processing_class=tokenizer,
        peft_config=peft_config(config),
        callbacks=[MetricsCallback(config.output_dir), RichProgressCallback(console)],
        rollout_func=make_rollout_func(runner, config.rlvr.max_new_tokens),
        advantage=config.advantage,
        dynamic_sampling=config.dynamic_sampling,
        format_prefix=prefix,
        fast_generation=False,
        shared_prompts=config.shared_prompts,
    )
    trainer.remove_callback(PrinterCallback)
    return trainer, runner


def run_rlvr(config: TrainConfig, *, console: Any = None) -> dict[str, Any]:
    """Train from ``config.init`` on environment episodes; writes checkpoints, metrics, plot, ``summary.json``."""

    started, out = time.monotonic(), config.output_dir
    refuse_viewed(config)
    write_config(config)
    (out / "metrics.jsonl").unlink(missing_ok=True)
    instances, held_out = rlvr_instances(config), rlvr_eval_instances(config)
    rows = rlvr_rows(config, instances)
    ids = {prompt_key(r["prompt"]): r["instance_id"] for r in rows}
    env_kwargs = rlvr_env_kwargs(config)

    def runner_factory(tokenizer, prefix):
        return EnvEpisodeRunner(
            tokenizer, instances + held_out, prompt_ids=ids, max_turns=config.rlvr.max_turns,
            think_prefix=prefix, env_kwargs=env_kwargs, parallel=config.rlvr.parallel,
        )  # fmt: skip

    trainer, runner = _trainer(config, rows, runner_factory, console)
    try:
        trainer.train()
        trained_episodes = runner.episodes
        evaluation = held_out_resolve_rate(trainer, runner, held_out, config.rlvr.max_new_tokens)
    finally:
        runner.close()
    if evaluation and trainer.is_world_process_zero():
        MetricsCallback(out).write({"step": trainer.state.global_step, **evaluation})
    trainer.save_model(str(out / "final"))
    trainer.processing_class.save_pretrained(str(out / "final"))
    rewards = [r["reward"] for r in read_metrics(out / "metrics.jsonl") if "reward" in r]
    summary = {
        "stage": "rlvr",
        "init": config.init,
        "instances": [i.instance_id for i in instances],
        "steps": trainer.state.global_step,
        "episodes": trained_episodes,
        "parallel": config.rlvr.parallel,
        "shell": config.rlvr.shell,
        "mean_outcome_reward": sum(rewards) / len(rewards) if rewards else float("nan"),
        "held_out": [i.instance_id for i in held_out],
        **evaluation,
        "final_model": str(out / "final"),
        "metrics": str(out / "metrics.jsonl"),
        "wall_time_s": round(time.monotonic() - started, 1),
    }
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    return summary
