"""The supervised (SFT) loss on expert steps: one place for the tiny model's format warm-up, the auxiliary SFT term
inside the GRPO step (``loss.sft_weight``) and a future ``--method sft`` baseline.

The target of a step is the model turn after the chat template's generation prompt: ``<think>`` (when the template
does not open it), the expert thought, then ``</think>``, a newline, the expert action and EOS. The loss is the mean
next-token NLL over ``</think>`` + action + EOS; the thought is context only (expert thoughts are often absent or
reconstructed, and SRL leaves the reasoning to the policy). Layout as TRL's batches: prompts left-padded, targets
right-padded.
"""

from __future__ import annotations

from typing import Any

from swe_srl.core.actions import THINK_CLOSE, THINK_OPEN
from swe_srl.core.view import PLAIN, PlainView


def sft_target(
    tokenizer: Any, action: str, thought: str = "", prefix: str = THINK_OPEN, max_tokens: int | None = None
) -> tuple[list[int], list[int]]:
    """(token ids, loss mask) of one expert turn; ``prefix`` is what the generation prompt already wrote."""
    context = ("" if prefix else THINK_OPEN) + thought.strip()
    ids = tokenizer(context, add_special_tokens=False)["input_ids"] if context else []
    target = tokenizer(f"{THINK_CLOSE}\n{action.strip()}", add_special_tokens=False)["input_ids"]
    target = [*target, tokenizer.eos_token_id]
    if max_tokens is not None:  # the budget goes to the target first
        target = target[:max_tokens]
        ids = ids[: max(0, max_tokens - len(target))]
    return ids + target, [0] * len(ids) + [1] * len(target)


def expert_turn(
    tokenizer: Any,
    row: dict,
    prefix: str,
    max_tokens: int | None,
    thought: bool = True,
    view: PlainView = PLAIN,
) -> tuple[list[int], list[int]]:
    """:func:`sft_target` of a sample row's expert step (its action as the policy writes it: ``view``), with the
    expert's thought as context when ``thought`` (``loss.sft_thought``), else an empty one, as the tiny warm-up and its
    greedy decoding have it: the SFT term, the replay anchor and ``--method sft`` all build their targets here."""
    text = str(row.get("expert_thought") or "") if thought else ""
    return sft_target(tokenizer, view.action(row), text, prefix, max_tokens)


def sft_examples(
    rows: list[dict],
    tokenizer,
    prefix: str,
    max_completion: int | None,
    thought: bool = True,
    view: PlainView = PLAIN,
) -> list[tuple[list[int], Any]]:
    """(prompt ids, :func:`expert_turn`) per (already fitted) row: the chat prompt with its generation prompt, then
    the expert turn; ``--method sft`` and the replay anchor (:mod:`swe_srl.train.anchor`) build their examples here."""
    examples = []
    for row in rows:
        text = tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True, tokenize=False)
        prompt = tokenizer(str(text), add_special_tokens=False)["input_ids"]
        examples.append((prompt, expert_turn(tokenizer, row, prefix, max_completion, thought, view)))
    return examples


def pad_right(rows: list[list[int]], value: int):
    """A (len(rows), longest) long tensor, each row padded on the right with ``value``."""
    import torch

    width = max((len(r) for r in rows), default=0)
    return torch.tensor([r + [value] * (width - len(r)) for r in rows], dtype=torch.long).reshape(
        len(rows), width
    )


def pad_left(rows: list[list], value: float, dtype: str = "long"):
    """A (len(rows), longest) tensor (``dtype``: long or float), each row padded on the left with ``value``."""
    import torch

    width = max((len(r) for r in rows), default=0)
    kind = {"long": torch.long, "float": torch.float}[dtype]
    return torch.tensor([[value] * (width - len(r)) + r for r in rows], dtype=kind).reshape(len(rows), width)


def target_batch(targets: list[tuple[list[int], list[int]]], pad_id: int) -> dict[str, Any]:
    """``sft_target`` results → ``target_ids``, ``target_mask`` (attention) and ``loss_mask``, right-padded."""
    return {
        "target_ids": pad_right([ids for ids, _ in targets], pad_id),
        "target_mask": pad_right([[1] * len(ids) for ids, _ in targets], 0),
        "loss_mask": pad_right([mask for _, mask in targets], 0),
    }


def completion_nll(
    model, prompt_ids, prompt_mask, target_ids, target_mask, loss_mask, prompt_weight: Any = 0.0
):
    """Mean next-token NLL of the ``loss_mask`` tokens of ``target_ids`` given the (left-padded) prompts.

    ``prompt_weight`` > 0 also scores the prompt's own tokens (a language-model loss on the problem, the oracle
    windows and the history, each token weighted ``prompt_weight`` against a target token's 1): the tiny model's
    warm-up uses it so that the model learns to read the prompt, not only to recite actions. A tensor shaped like
    ``prompt_ids`` weights each prompt token on its own (the tiny warm-up's ``turn_weights``).
    """
    import torch

    input_ids = torch.cat([prompt_ids, target_ids], dim=1)
    attention = torch.cat([prompt_mask, target_mask], dim=1)
    per_token = isinstance(prompt_weight, torch.Tensor)
    if per_token or prompt_weight > 0:
        labels = input_ids[:, 1:]
        weights = torch.cat([prompt_mask.float() * prompt_weight, loss_mask.float()], dim=1)[:, 1:]
        logits = model(input_ids=input_ids, attention_mask=attention).logits[:, :-1]
    else:
        labels, weights = target_ids, loss_mask.float()
        width = target_ids.shape[1]
        logits = model(input_ids=input_ids, attention_mask=attention, logits_to_keep=width + 1).logits[:, :-1]
    nll = torch.nn.functional.cross_entropy(
        logits.float().reshape(-1, logits.shape[-1]), labels.reshape(-1), reduction="none"
    ).view_as(labels)
    weights = weights.to(nll.dtype)
    return (nll * weights).sum() / weights.sum().clamp(min=1.0)
