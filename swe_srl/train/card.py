"""The model card (README.md) of a training run: base model, data, method, held-out metrics and the command."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

from swe_srl.train.config import TrainConfig, start_of


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def data_facts(config: TrainConfig, sample_set: Any, train_rows: list, test_rows: list) -> dict[str, Any]:
    """Where the samples came from and how many there are."""
    if config.trajectories:
        sources = list(config.trajectories)
    elif config.samples:
        sources = []
    else:
        sources = [
            "bundled suite: scripted-expert trajectories of bundled:train (trained on"
            + (f"; {config.expert_seeds} expert seeds per task" if config.expert_seeds > 1 else "")
            + f"), bundled:{config.heldout_split} (held out)"
        ]
    trajectories = list(getattr(sample_set, "trajectories", []) or [])
    return {
        "trajectory_sources": sources,
        "samples_file": str(sample_set.path),
        "trajectories": len(trajectories),
        "trajectory_instances": len({t.instance_id for t in trajectories}),
        "train_samples": len(train_rows),
        "test_samples": len(test_rows),
        "train_instances": len({r["instance_id"] for r in train_rows}),
        "test_instances": len({r["instance_id"] for r in test_rows}),
        "warmup_split": split_facts(config, train_rows),
    }


def split_facts(config: TrainConfig, train_rows: list) -> dict[str, int] | None:
    """The tiny warm-up's share of the train split and training's (None: both use every train sample)."""
    warm, rest = start_of(config).warmup_split(config, train_rows)
    if warm is rest:
        return None
    return {
        "warmup_samples": len(warm),
        "warmup_instances": len({r["instance_id"] for r in warm}),
        "trained_samples": len(rest),
        "trained_instances": len({r["instance_id"] for r in rest}),
    }


def _split_line(split: dict[str, int] | None) -> list[str]:
    if not split:
        return []
    return [
        f"- the tiny model's warm-up saw {split['warmup_samples']} of them ({split['warmup_instances']} instances); "
        f"training used the other {split['trained_samples']} ({split['trained_instances']} instances; "
        "tiny.warmup_share)"
    ]


def _held_out(evals: list[dict[str, Any]]) -> str:
    if not evals:
        return "No held-out evaluation was run (eval.max_samples=0)."
    first, last = evals[0], evals[-1]
    lines = [
        f"Mean reward of greedy completions on held-out (test-split) samples: **{last['mean_reward']:+.3f}** "
        f"at step {last['step']}"
        + (f" (from {first['mean_reward']:+.3f} at step {first['step']})." if len(evals) > 1 else ".")
    ]
    lines += ["", "| step | held-out mean reward |", "|---|---|"]
    lines += [f"| {e['step']} | {e['mean_reward']:+.3f} |" for e in evals]
    return "\n".join(lines)


def _sft_method(config: TrainConfig, args: Any, summary: dict[str, Any]) -> list[str]:
    """The ``--method sft`` baseline's paragraph (nothing for SRL)."""
    if config.method != "sft":
        return []
    return [
        f"**`--method sft`: the supervised baseline.** Plain SFT on the expert turns (NLL of `</think>` + action + "
        f"EOS) for {summary.get('steps', '?')} steps of {summary.get('prompts_per_step', '?')} prompts, learning "
        f"rate {args.learning_rate}; SFT loss {summary.get('loss_first_fifth', float('nan')):.3f} → "
        f"{summary.get('loss_last_fifth', float('nan')):.3f} (first → last fifth of steps). The SRL settings "
        "below are those it is compared with (same start, samples, steps, learning rate); no rollouts, no reward "
        "in training.",
        "",
    ]


def model_card(config: TrainConfig, args: Any, base_model: str, data: dict[str, Any], summary: dict[str, Any],
               command: str) -> str:  # fmt: skip
    """The card's markdown; ``summary`` is the run's summary.json (partial while training)."""
    ds = config.dynamic_sampling
    hub_base = base_model if "/" in base_model and not base_model.startswith(("/", ".")) else None
    front = ["---", "library_name: transformers", "tags: [swe-srl, srl, grpo, trl, software-engineering]"]
    front += [f"base_model: {hub_base}"] if hub_base else []
    front += ["---", ""]
    sources = data["trajectory_sources"]
    evals = summary.get("eval") or []
    body = [
        f"# {config.output_dir.name}: an SRL policy for software-engineering steps",
        "",
        f"Trained with `swe-srl train` (stage `{config.stage}`) from **{base_model}**.",
        "",
        "## Data",
        "",
        *[f"- trajectories: {s}" for s in sources],
        f"- {data['trajectories']} expert trajectories of {data['trajectory_instances']} instances"
        if data["trajectories"]
        else "- expert trajectories: already decomposed into the step samples below",
        f"- step samples: {data['train_samples']} train ({data['train_instances']} instances), "
        f"{data['test_samples']} held out ({data['test_instances']} instances); file `{data['samples_file']}`",
        *_split_line(data.get("warmup_split")),
        f"- oracle files in prompts: {'yes' if config.oracle_files else 'no'}",
        f"- library names swapped (swe_srl.train.tiny.augment) in {config.swap_library_names:.0%} of the training samples"
        + (f" (new names from: {config.swap_pool})" if config.swap_library_names else ""),
        "",
        "## Method",
        "",
        *_sft_method(config, args, summary),
        "Supervised Reinforcement Learning (SRL): each expert trajectory is cut into steps; for step k the policy "
        "sees the problem and the expert's steps 1..k-1, writes `<think>…</think>` and one bash action, and is "
        "rewarded by the action's agreement with the expert's action. GRPO (TRL `GRPOTrainer`) on those rewards.",
        "",
        f"- reward: `{config.reward}`"
        + (
            f" ({config.reward_mix:g} × paper similarity + {1 - config.reward_mix:g} × layered)"
            if config.reward == "mixed"
            else ""
        )
        + (f" (effect layer: {config.effect})" if config.reward != "srl" else ""),
        f"- advantage: `{config.advantage}`; scale_rewards `{getattr(args, 'scale_rewards', '?')}`",
        f"- dynamic sampling: {'on' if ds.enabled else 'off'}, ε = {ds.epsilon} (groups with reward std ≤ ε "
        f"dropped), up to {ds.max_rounds} generation rounds",
        f"- KL β = {args.beta}; loss `{args.loss_type}`; clipping ε = {args.epsilon}, ε_high = "
        f"{args.epsilon_high if args.epsilon_high is not None else args.epsilon}; entropy bonus {args.entropy_coef}",
        f"- SFT term λ = {config.loss.sft_weight}",
        f"- {args.num_generations} generations per prompt, temperature {args.temperature}, max completion "
        f"{args.max_completion_length} tokens; learning rate {args.learning_rate} ({getattr(args.lr_scheduler_type, 'value', args.lr_scheduler_type)})",
        f"- LoRA: {f'r={config.lora.r}, alpha={config.lora.alpha}' if config.lora.enabled else 'no (full weights)'}",
        f"- optimizer steps: {summary.get('steps', '?')}",
        "- final weights: "
        + (
            "as trained"
            if config.wise_ft >= 1
            else f"WiSE-FT, {1 - config.wise_ft:g} × start + {config.wise_ft:g} × trained (checkpoints as trained)"
        ),
        "",
        "## Held-out metrics",
        "",
        _held_out(evals),
        "",
    ]
    if "reward_first_fifth" in summary:
        body += [
            f"Mean training reward: {summary['reward_first_fifth']:+.3f} in the first fifth of steps → "
            f"{summary['reward_last_fifth']:+.3f} in the last.",
            "",
        ]
    body += [
        "## Reproduce",
        "",
        "```",
        command,
        "```",
        "",
        f"swe-srl {_version('swe-srl')}, trl {_version('trl')}, transformers {_version('transformers')}, "
        f"torch {_version('torch')}.",
        "",
    ]
    return "\n".join(front + body)
