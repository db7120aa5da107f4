"""``swe-srl train --method sft``: the SRL paper's main baseline — plain supervised fine-tuning on the same training
samples' expert turns, from the same starting checkpoint, for the same optimizer steps, learning rate (and schedule)
and prompts per step as the SRL run it is compared with.

The loss is the one SFT loss of :mod:`swe_srl.train.sft` (the auxiliary SFT term's: NLL of ``</think>`` + expert
action + EOS given the prompt and the expert thought). The step budget and optimizer settings are read from the same
``trl.GRPOConfig`` the SRL run builds (:func:`~swe_srl.train.policy.grpo_args`): ``max_steps`` (unset:
``num_train_epochs`` passes, :func:`sft_steps`), ``learning_rate``, ``lr_scheduler_type``/``_kwargs``,
``warmup_steps``, ``weight_decay``, ``max_grad_norm``, ``max_completion_length``; one step sees ``per_device_train_batch_size × gradient_accumulation_steps / num_generations`` prompts (SRL's prompts
per step), in micro-batches of ``per_device_train_batch_size / num_generations``. A plain torch loop (as the tiny
model's format warm-up): no generation, so TRL's trainer machinery would add nothing but configuration to keep equal.
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

from swe_srl.train.callbacks import MetricsCallback
from swe_srl.train.config import TrainConfig, start_of
from swe_srl.train.fitting import fit_rows
from swe_srl.train.heldout import greedy_outputs
from swe_srl.train.policy import grpo_args, think_prefix
from swe_srl.train.sft import completion_nll, pad_left, sft_examples, target_batch


def batches(count: int, size: int, seed: int):
    """Endless index batches of ``size`` over ``range(count)``: shuffled epochs, as a data loader would."""
    rng, order = random.Random(seed), []
    while True:
        batch = []
        while len(batch) < size:
            if not order:
                order = list(range(count))
                rng.shuffle(order)
            batch.append(order.pop())
        yield batch


class SftPolicy:
    """The starting policy, its tokenizer and the SRL run's TRL arguments (what the SFT run shares with SRL)."""

    def __init__(self, config: TrainConfig, train_rows: list[dict]) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        start = start_of(config)
        path = start.model_path(config, train_rows)
        self.args = grpo_args(config)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.view = start.view(self.tokenizer)
        self.model = AutoModelForCausalLM.from_pretrained(path)
        if torch.cuda.is_available():
            self.model.to("cuda")
        self.model.name_or_path = path
        self.prefix = think_prefix(self.tokenizer)
        self.max_prompt = start.max_prompt_tokens(config)
        self.batch_size = config.eval.batch_size
        self.thought = config.loss.sft_thought

    def fit(self, rows: list[dict]) -> list[dict]:
        """``rows`` as the policy reads them (slotted for a slotted policy), fitted to its context."""
        rows = self.view.rows(rows)
        return fit_rows(rows, self.max_prompt, self.tokenizer) if self.max_prompt else rows

    def greedy(self, rows: list[dict]) -> list[str]:
        """Greedy outputs on (fitted) ``rows``, as the held-out report decodes them for SRL."""
        prompts = [r["prompt"] for r in rows]
        size = self.args.max_completion_length
        outputs = greedy_outputs(self.model, self.tokenizer, prompts, size, self.batch_size, self.prefix)
        return self.view.outputs(outputs, rows)


def sft_steps(args, examples: int, prompts_per_step: int) -> int:
    """The optimizer steps: ``max_steps`` when set (> 0), else ``num_train_epochs`` passes over the examples, as TRL
    counts them for SRL."""
    if args.max_steps > 0:
        return args.max_steps
    return max(1, math.ceil(args.num_train_epochs * examples / max(1, prompts_per_step)))


def train_sft(policy: SftPolicy, train_rows: list[dict], out: Path, seed: int) -> list[float]:
    """``max_steps`` optimizer steps of the SFT loss; one metrics.jsonl record per step; returns the losses."""
    import torch
    from transformers import get_scheduler

    args, model, tokenizer = policy.args, policy.model, policy.tokenizer
    examples = sft_examples(
        policy.fit(train_rows),
        tokenizer,
        policy.prefix,
        args.max_completion_length,
        policy.thought,
        policy.view,
    )
    micro = max(1, args.per_device_train_batch_size // args.num_generations)
    accumulation = args.gradient_accumulation_steps
    steps = sft_steps(args, len(examples), micro * accumulation)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate, weight_decay=args.weight_decay)
    scheduler = get_scheduler(
        args.lr_scheduler_type,
        optimizer,
        num_warmup_steps=args.get_warmup_steps(steps),
        num_training_steps=steps,
        scheduler_specific_kwargs=args.lr_scheduler_kwargs or {},
    )
    (out / "metrics.jsonl").unlink(missing_ok=True)
    metrics, pad, device = MetricsCallback(out), tokenizer.pad_token_id, model.device
    stream, losses = batches(len(examples), micro, seed), []
    model.train()
    for step in range(1, steps + 1):
        total = 0.0
        for _ in range(accumulation):
            batch = [examples[i] for i in next(stream)]
            targets = {k: v.to(device) for k, v in target_batch([t for _, t in batch], pad).items()}
            loss = completion_nll(
                model,
                pad_left([p for p, _ in batch], pad).to(device),
                pad_left([[1] * len(p) for p, _ in batch], 0).to(device),
                targets["target_ids"],
                targets["target_mask"],
                targets["loss_mask"],
            )
            (loss / accumulation).backward()
            total += loss.item() / accumulation
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
        rate = scheduler.get_last_lr()[0]
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        losses.append(total)
        metrics.write({"step": step, "loss": total, "sft/loss": total, "grad_norm": float(norm),
                       "learning_rate": rate, "prompts": micro * accumulation})  # fmt: skip
    model.eval()
    return losses


def save_policy(policy: SftPolicy, directory: Path) -> None:
    policy.model.save_pretrained(str(directory))
    policy.tokenizer.save_pretrained(str(directory))


def sft_summary(policy: SftPolicy, losses: list[float], counts: dict[str, Any], out: Path) -> dict[str, Any]:
    """The SFT run's part of summary.json (the held-out report and paths are added by the caller); the loss as the
    mean of the first and the last fifth of steps (one step's batch is a few prompts: single steps are noisy)."""
    fifth = max(1, len(losses) // 5)
    first = sum(losses[:fifth]) / fifth if losses else float("nan")
    last = sum(losses[-fifth:]) / fifth if losses else float("nan")
    return {
        "stage": "srl",
        "method": "sft",
        "model": str(policy.model.name_or_path),
        "steps": len(losses),
        **counts,
        "prompts_per_step": policy.args.per_device_train_batch_size
        * policy.args.gradient_accumulation_steps
        // policy.args.num_generations,
        "learning_rate": policy.args.learning_rate,
        "loss_first_fifth": first,
        "loss_last_fifth": last,
        "loss_fell": bool(last < first),
        "eval": [],
        "final_model": str(out / "final"),
        "metrics": str(out / "metrics.jsonl"),
        "plot": str(out / "training_curves.png"),
    }
