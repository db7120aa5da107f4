"""The anchor (``loss.replay_weight``, logged as ``replay/loss``): an SFT term on train samples drawn uniformly, in
every GRPO step. (Trajectory replay, the evaluation policy, is :mod:`swe_srl.eval.replay`.)

The auxiliary SFT term (``loss.sft_weight``) sees only the prompts of the step's batch, which dynamic sampling fills
with the groups whose rewards differ: mostly the early steps of a trajectory, where the policy still errs. Where
every completion of a group is already the expert's (a late ``submit``, an edit), the group is dropped and nothing
holds the policy there while the other groups move it. The anchor adds λ · NLL of the expert action on
``count`` train samples per step drawn without regard to the batch (a shuffled pass over the train set, then the
next), in the way InstructGPT mixes pretraining batches into PPO (Ouyang et al., 2022).

The rows ride in the training batch like the SFT term's (``anchor_*`` tensors with the batch's first dimension, the
drawn samples in ``anchor_row`` rows), so TRL's splitting and shuffling of the batch keep them aligned.
"""

from __future__ import annotations

from typing import Any

import torch

from swe_srl.core.view import PLAIN, PlainView
from swe_srl.errors import TrainingError
from swe_srl.train.sft import pad_left, sft_examples, target_batch


class ShuffledPasses:
    """Indices of a dataset in shuffled passes (one permutation, then the next) from its own seeded generator; the
    state (generator + the rest of the pass) goes into checkpoints. Dynamic sampling's refill draws with one, the
    anchor with another."""

    def __init__(self, size: int, seed: int) -> None:
        self.size = size
        self.generator = torch.Generator().manual_seed(seed)
        self.order: list[int] = []

    def next(self) -> int:
        if not self.order:
            self.order = torch.randperm(self.size, generator=self.generator).tolist()
        return self.order.pop()

    def state(self) -> dict[str, Any]:
        return {"generator": self.generator.get_state().tolist(), "order": list(self.order)}

    def load_state(self, state: dict[str, Any]) -> None:
        self.generator.set_state(torch.tensor(state["generator"], dtype=torch.uint8))
        self.order = [int(i) for i in state["order"]]


class AnchorSampler(ShuffledPasses):
    """Draws ``count`` train rows per step (shuffled passes) and builds their SFT tensors (:func:`sft_examples`)."""

    def __init__(
        self,
        dataset: Any,
        count: int,
        seed: int,
        tokenizer: Any = None,
        *,
        prefix: str = "",
        max_tokens: int | None = None,
        thought: bool = True,
        view: PlainView = PLAIN,
    ) -> None:
        if count < 1:
            raise TrainingError(f"loss.replay_batch must be >= 1, got {count}")
        super().__init__(len(dataset), seed)
        self.dataset, self.count, self.tokenizer = dataset, count, tokenizer
        self.prefix, self.max_tokens, self.thought, self.view = prefix, max_tokens, thought, view

    def draw(self) -> list[dict[str, Any]]:
        return [dict(self.dataset[self.next()]) for _ in range(self.count)]

    def batch(self, width: int, device: Any) -> dict[str, Any]:
        """``anchor_*`` tensors of ``width`` rows (the training batch's), the drawn samples spread over them."""
        if self.count > width:
            raise TrainingError(f"loss.replay_batch ({self.count}) exceeds the training batch ({width} rows)")
        rows = self.draw()
        for row in rows:
            if not str(row.get("expert_action") or "").strip():
                raise TrainingError("loss.replay_weight > 0 needs an expert_action in every training row")
        examples = sft_examples(rows, self.tokenizer, self.prefix, self.max_tokens, self.thought, self.view)
        pad = self.tokenizer.pad_token_id
        where = [i * (width // self.count) for i in range(self.count)]
        prompts, masks, targets = [[pad]] * width, [[0]] * width, [([pad], [0])] * width
        for slot, (prompt, target) in zip(where, examples, strict=True):
            prompts[slot], masks[slot], targets[slot] = prompt, [1] * len(prompt), target
        marks = torch.zeros(width, dtype=torch.long)
        marks[where] = 1
        tensors = target_batch(targets, pad)
        return {
            "anchor_prompt_ids": pad_left(prompts, pad).to(device),
            "anchor_prompt_mask": pad_left(masks, 0).to(device),
            "anchor_target_ids": tensors["target_ids"].to(device),
            "anchor_target_mask": tensors["target_mask"].to(device),
            "anchor_loss_mask": tensors["loss_mask"].to(device),
            "anchor_row": marks.to(device),
        }
