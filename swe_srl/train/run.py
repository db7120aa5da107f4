"""The training pipeline: samples → datasets → policy (tiny default or HF model) → SRLGRPOTrainer → summary."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from swe_srl.errors import TrainingError
from swe_srl.paths import atomic_write_text
from swe_srl.rewards import SRLReward
from swe_srl.rewards.effect.evaluator import SandboxEffect
from swe_srl.rewards.syntax_inputs import StepInputs
from swe_srl.rewards.trl import PrefixedReward
from swe_srl.train.callbacks import (
    HeldOutEvalCallback,
    MetricsCallback,
    RichProgressCallback,
    TrainBeginCallback,
    plot_metrics,
    read_metrics,
)
from swe_srl.train.card import data_facts, model_card
from swe_srl.train.config import TrainConfig, start_of
from swe_srl.train.data import (
    guard_eval_instances,
    read_samples,
    require_generation_batch,
    split_rows,
    to_dataset,
)
from swe_srl.train.fitting import fit_rows
from swe_srl.train.heldout import greedy_outputs, heldout_report, report_table, step_table
from swe_srl.train.policy import grpo_args, peft_config, think_prefix
from swe_srl.train.record import write_config
from swe_srl.train.resume import RefillStateCallback, checkpoint_step, restore_refill_state, resume_metrics
from swe_srl.train.rlvr_run import run_rlvr
from swe_srl.train.samples import resolve_samples
from swe_srl.train.trainer import SRLGRPOTrainer
from swe_srl.train.wise import apply_wise, snapshot


def build_effect(config: TrainConfig, sample_set) -> Any:
    """The sandbox effect evaluator for ``--effect cached|full`` (None when off), knowing the run's trajectories."""
    if config.effect == "off":
        return None
    if config.reward == "srl":
        raise TrainingError(
            f"--effect {config.effect} needs --reward layered or mixed (the srl reward has no effect layer)"
        )
    if not sample_set.trajectories:
        raise TrainingError(
            f"--effect {config.effect} replays the expert trajectories the samples came from: pass them with "
            "--trajectories (or use the bundled default / --trajectories instead of --samples)"
        )

    return SandboxEffect(
        config.effect,
        trajectories=sample_set.trajectories,
        instances=sample_set.instances,
        dataset=config.tasks or "bundled",
        repos_dir=config.repos_path,
    )


def build_reward(config: TrainConfig, effect: Any = None, sample_set: Any = None) -> Any:
    """The shared SRL reward (rewards team), configured from the run's options; with ``sample_set`` its syntax
    layer judges each sample against its instance image's executables and expert state, as the env does."""
    inputs = None
    if sample_set is not None:
        inputs = StepInputs(
            sample_set.trajectories,
            sample_set.instances,
            dataset=config.tasks or "bundled",
            repos_dir=config.repos_path,
        )
    return SRLReward(
        mode=config.reward,
        weights={"mix": config.reward_mix},
        effect_mode=config.effect,
        fuzzy=config.fuzzy,
        effect=effect,
        inputs=inputs,
    )


def spread(rows: list[dict], n: int) -> list[dict]:
    """Up to ``n`` rows evenly spaced over ``rows`` (held-out samples from every instance, not the first few)."""
    if n <= 0 or not rows:
        return []
    step = len(rows) / min(n, len(rows))
    return [rows[int(i * step)] for i in range(min(n, len(rows)))]


def build_trainer(
    config: TrainConfig, train_rows, test_rows, reward_func=None, console=None, effect=None, sample_set=None
):
    """The configured ``SRLGRPOTrainer`` with metrics, held-out eval and progress callbacks."""
    from transformers import AutoTokenizer, PrinterCallback

    start = start_of(config)
    args = grpo_args(config)
    rows = start.training_rows(config, train_rows)
    source = sample_set.path if sample_set else config.samples
    require_generation_batch(len(rows), args, f"--samples {source}")  # before the start's warm-up, if any
    model_path = start.model_path(config, train_rows)
    train_rows = rows
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    prefix, view = think_prefix(tokenizer), start.view(tokenizer)
    held_out = spread(test_rows, config.eval.max_samples)
    train_rows, held_out = view.rows(train_rows), view.rows(held_out)
    max_prompt = start.max_prompt_tokens(config)
    if max_prompt:  # the model's context window
        train_rows = fit_rows(train_rows, max_prompt, tokenizer)
        held_out = fit_rows(held_out, max_prompt, tokenizer)
    reward = reward_func if reward_func is not None else build_reward(config, effect, sample_set)
    if prefix:
        reward = PrefixedReward(reward, prefix)
    reward = view.reward(reward)
    metrics = MetricsCallback(config.output_dir)
    evaluator = HeldOutEvalCallback(
        held_out, reward, metrics, config.eval.every, args.max_completion_length, config.eval.batch_size
    )
    trainer = SRLGRPOTrainer(
        model=model_path,
        reward_funcs=[reward],
        args=args,
        train_dataset=to_dataset(train_rows),
        processing_class=tokenizer,
        peft_config=peft_config(config),
        callbacks=[metrics, evaluator, RichProgressCallback(console)],
        advantage=config.advantage,
        dynamic_sampling=config.dynamic_sampling,
        format_prefix=prefix,
        fast_generation=config.fast_generation,
        shared_prompts=config.shared_prompts,
        rloo_scale=config.trl.get("scale_rewards", "none"),
        view=view,
        **config.loss.model_dump(),  # sft_weight, replay_weight, replay_batch, sft_thought
    )
    trainer.remove_callback(PrinterCallback)  # the rich bar + metrics.jsonl replace printed dicts
    trainer.add_callback(RefillStateCallback(trainer))
    trainer.fit_prompt_tokens = max_prompt  # the held-out report fits every test prompt the same way
    trainer.view = view
    return trainer, evaluator


def heldout_outputs(config: TrainConfig, trainer, rows: list[dict]) -> list[str]:
    """Greedy outputs of ``trainer.model`` as it is now on ``rows`` (fitted: ``trainer.fit_prompt_tokens``), as the
    reward scores them (a slotted policy's slots mapped back)."""
    prompts = [r["prompt"] for r in rows]
    size = trainer.args.max_completion_length
    outputs = greedy_outputs(
        trainer.model, trainer.processing_class, prompts, size, config.eval.batch_size, trainer.format_prefix
    )
    return trainer.view.outputs(outputs, rows)


def summarize(config: TrainConfig, trainer, evaluator, counts: dict[str, Any]) -> dict[str, Any]:
    """First vs last fifth of the logged mean rewards, eval history, paths."""

    rewards = [r["reward"] for r in read_metrics(config.output_dir / "metrics.jsonl") if "reward" in r]
    fifth = max(1, len(rewards) // 5)
    first = sum(rewards[:fifth]) / fifth if rewards else float("nan")
    last = sum(rewards[-fifth:]) / fifth if rewards else float("nan")
    return {
        "stage": config.stage,
        "method": config.method,
        "model": trainer.model.name_or_path,
        "advantage": config.advantage,
        "reward": config.reward,
        "reward_mix": config.reward_mix,
        "wise_ft": config.wise_ft,
        "steps": trainer.state.global_step,
        **counts,
        "reward_first_fifth": first,
        "reward_last_fifth": last,
        "reward_rose": bool(last > first),
        "eval": [{"step": s, "mean_reward": v} for s, v in evaluator.history],
        **start_of(config).model_summary(Path(trainer.model.name_or_path)),
        "final_model": str(config.output_dir / "final"),
        "metrics": str(config.output_dir / "metrics.jsonl"),
        "plot": str(config.output_dir / "training_curves.png"),
    }


def default_command() -> str:
    """The command line of this process, as `swe-srl ...` when run through the CLI."""
    argv = list(sys.argv)
    if argv and (Path(argv[0]).name in ("swe-srl", "__main__.py") or argv[0] == "-m"):
        argv = ["swe-srl", *argv[1:]]
    return shlex.join(argv)


def split_samples(config: TrainConfig):
    """(sample set, train rows, test rows) of the run; evaluation instances refused in training."""
    sample_set = resolve_samples(config)
    train_rows, test_rows = split_rows(
        read_samples(sample_set.path), config.test_fraction, config.heldout_split
    )
    guard_eval_instances(
        [r["instance_id"] for r in train_rows], config.allow_eval_instances, "training samples"
    )
    return sample_set, train_rows, test_rows


def write_summary(
    config: TrainConfig, summary, held, tokenizer, console, started: float, command: str
) -> None:
    """The held-out report (``held`` = train rows, fitted test rows, starting and final outputs), the plot, the
    printed table and summary.json; shared by ``--method srl`` and ``--method sft``."""
    out = config.output_dir
    train_rows, fitted_test, initial_outputs, final_outputs = held
    summary["heldout"] = heldout_report(
        out, train_rows, fitted_test, tokenizer, initial_outputs, final_outputs, config.heldout_split
    )
    plot_metrics(out / "metrics.jsonl", out / "training_curves.png", summary["heldout"])
    if console is not None and fitted_test:
        console.print(report_table(summary["heldout"]), step_table(summary["heldout"]))
    summary["wall_time_s"] = round(time.monotonic() - started, 1)
    summary["command"] = command
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=2) + "\n")


def run_training(
    config: TrainConfig, *, reward_func=None, console=None, command: str | None = None
) -> dict[str, Any]:
    """Run SRL (or RLVR) training as configured; writes checkpoints, metrics, plot, ``summary.json`` and the model
    card (``final/README.md``)."""
    from transformers.trainer_utils import get_last_checkpoint

    if config.stage == "rlvr":
        return run_rlvr(config, console=console)
    if config.method != "srl":
        raise TrainingError(f"run_training is --method srl; --method {config.method}: swe_srl.train.launch")
    started = time.monotonic()
    command = command or default_command()
    grpo_args(config)  # GRPOConfig's own checks, before any work
    out = config.output_dir
    checkpoint = get_last_checkpoint(str(out)) if config.resume and out.is_dir() else None
    if config.resume and checkpoint is None:
        raise TrainingError(f"--resume: no checkpoint-* directory in {out}; run without --resume first")
    if not config.resume:
        (out / "metrics.jsonl").unlink(missing_ok=True)
        shutil.rmtree(out / "tiny-model", ignore_errors=True)
    write_config(config)
    sample_set, train_rows, test_rows = split_samples(config)
    effect = build_effect(config, sample_set) if reward_func is None else None
    trainer, evaluator = build_trainer(
        config, train_rows, test_rows, reward_func, console, effect, sample_set
    )
    if checkpoint is not None:
        evaluator.history = resume_metrics(out / "metrics.jsonl", checkpoint_step(Path(checkpoint)))
        restore_refill_state(trainer, Path(checkpoint))
    data = data_facts(config, sample_set, train_rows, test_rows)
    base = start_of(config).describe(config)

    def card(summary: dict[str, Any] | None = None) -> str:
        partial = {
            "steps": trainer.state.global_step,
            "eval": [{"step": s, "mean_reward": v} for s, v in evaluator.history],
        }
        return model_card(config, trainer.args, base, data, summary or partial, command)

    trainer.model_card = card
    # the starting policy's outputs on every test sample, before any step (on resume: the run's starting model)
    budget, tokenizer = trainer.fit_prompt_tokens, trainer.processing_class
    policy_test = trainer.view.rows(test_rows)  # as the policy reads them (slotted for a slotted one)
    fitted_test = fit_rows(policy_test, budget, tokenizer) if budget else policy_test
    initial = TrainBeginCallback(lambda: heldout_outputs(config, trainer, fitted_test))
    trainer.add_callback(initial)
    start = snapshot(trainer.model) if config.wise_ft < 1 else {}
    trainer.train(resume_from_checkpoint=checkpoint)
    initial_outputs = initial.value
    apply_wise(trainer.model, start, config.wise_ft)  # final/ (not the checkpoints) is the WiSE-FT mix
    trainer.save_model(str(out / "final"))
    trainer.processing_class.save_pretrained(str(out / "final"))
    counts = {"samples_file": str(sample_set.path), **start_of(config).counts(config, train_rows)}
    summary = summarize(config, trainer, evaluator, {**counts, "test_samples": len(test_rows)})
    final_outputs = heldout_outputs(config, trainer, fitted_test)  # the same fitted prompts, fitted once
    held = (train_rows, fitted_test, initial_outputs, final_outputs)
    write_summary(config, summary, held, trainer.processing_class, console, started, command)
    atomic_write_text(out / "final" / "README.md", card(summary))
    atomic_write_text(out / "README.md", card(summary))
    return summary
