"""The replay anchor (``loss.replay_weight``): an SFT term on train samples drawn uniformly, in every GRPO step.

The auxiliary SFT term (``loss.sft_weight``) sees only the prompts of the step's batch, which dynamic sampling fills
with the groups whose rewards differ: mostly the early steps of a trajectory, where the policy still errs. Where
every completion of a group is already the expert's (a late ``submit``, an edit), the group is dropped and nothing
holds the policy there while the other groups move it. The replay anchor adds λ · NLL of the expert action on
``count`` train samples per step drawn without regard to the batch (a shuffled pass over the train set, then the
next), in the way InstructGPT mixes pretraining batches into PPO (Ouyang et al., 2022).

The rows ride in the training batch like the SFT term's (``replay_*`` tensors with the batch's first dimension, the
drawn samples in ``replay_row`` rows), so TRL's splitting and shuffling of the batch keep them aligned.
"""

from __future__ import annotations

from typing import Any

import torch

from swe_srl.errors import TrainingError
from swe_srl.train.sft import expert_turn, pad_left, target_batch


class ReplaySampler:
    """Draws train rows uniformly (shuffled passes, its own seeded generator) and builds their SFT tensors."""

    def __init__(self, dataset: Any, count: int, seed: int, tokenizer: Any = None) -> None:
        if count < 1:
            raise TrainingError(f"loss.replay_batch must be >= 1, got {count}")
        self.dataset, self.count, self.tokenizer = dataset, count, tokenizer
        self.target: tuple[str, int | None, bool] = (
            "",
            None,
            True,
        )  # (prefix, max tokens, thought): expert_turn's
        self.generator = torch.Generator().manual_seed(seed)
        self.order: list[int] = []

    def draw(self) -> list[dict[str, Any]]:
        rows = []
        for _ in range(self.count):
            if not self.order:
                self.order = torch.randperm(len(self.dataset), generator=self.generator).tolist()
            rows.append(dict(self.dataset[self.order.pop()]))
        return rows

    def state(self) -> dict[str, Any]:
        return {"generator": self.generator.get_state().tolist(), "order": list(self.order)}

    def load_state(self, state: dict[str, Any]) -> None:
        self.generator.set_state(torch.tensor(state["generator"], dtype=torch.uint8))
        self.order = [int(i) for i in state["order"]]

    def batch(self, width: int, device: Any) -> dict[str, Any]:
        """``replay_*`` tensors of ``width`` rows (the training batch's), the drawn samples spread over them."""
        tokenizer, (prefix, max_tokens, thought) = self.tokenizer, self.target
        rows = self.draw()
        if self.count > width:
            raise TrainingError(f"loss.replay_batch ({self.count}) exceeds the training batch ({width} rows)")
        prompts, targets = [], []
        for row in rows:
            if not str(row.get("expert_action") or "").strip():
                raise TrainingError("loss.replay_weight > 0 needs an expert_action in every training row")
            prompt = row["prompt"]
            if not isinstance(prompt, str):
                prompt = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)
            prompts.append(tokenizer(prompt, add_special_tokens=False)["input_ids"])
            targets.append(expert_turn(tokenizer, row, prefix, max_tokens, thought))
        step = width // self.count
        where = [i * step for i in range(self.count)]
        pad = tokenizer.pad_token_id
        full_prompts, full_targets = [[pad]] * width, [([pad], [0])] * width
        for slot, ids, target in zip(where, prompts, targets, strict=True):
            full_prompts[slot], full_targets[slot] = ids, target
        marks = torch.zeros(width, dtype=torch.long)
        marks[where] = 1
        prompt_mask = pad_left([[1] * len(p) for p in full_prompts], 0)
        for i in range(width):
            if not marks[i]:
                prompt_mask[i] = 0
        tensors = target_batch(full_targets, pad)
        return {
            "replay_prompt_ids": pad_left(full_prompts, pad).to(device),
            "replay_prompt_mask": prompt_mask.to(device),
            "replay_target_ids": tensors["target_ids"].to(device),
            "replay_target_mask": tensors["target_mask"].to(device),
            "replay_loss_mask": tensors["loss_mask"].to(device),
            "replay_row": marks.to(device),
        }
