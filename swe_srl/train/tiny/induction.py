"""Induction steps: the tiny model's stand-in for the copying a pretrained model brings.

A pretrained LM continues a span it has seen earlier in its context (induction heads); a model trained from scratch
on a few hundred samples does not, and the tiny policy recalls the train split's test names instead of reading the
problem's. Each induction sequence is a window of a train prompt, other prompt text, then the same window again,
with the loss on the repeat after its first token (the only tokens the context fully determines). ``tiny.induction_
steps`` of them run before the format warm-up, and ``tiny.induction_every`` interleaves one after every K warm-up
steps so the warm-up does not train the circuit away (:func:`swe_srl.train.tiny.model.format_warmup`).
"""

from __future__ import annotations

import random
from typing import Any

SPAN = 96
"""Longest repeated window, in tokens (windows are 8..SPAN long)."""
GAP = 256
"""Longest text before the window; the text between the window and its repeat is at most half of it."""


class RepeatedSpans:
    """Induction batches drawn from ``prompts`` (token id lists) and, from the first :meth:`step`, an AdamW of its
    own that trains ``model`` on them (rate ``lr``, reached linearly over 20 steps)."""

    def __init__(
        self, model: Any, pad_id: int, prompts: list[list[int]], seed: int, lr: float = 3e-3
    ) -> None:
        self.model, self.pad, self.prompts, self.lr = model, pad_id, [p for p in prompts if p], lr
        self.rng = random.Random(seed)
        self.optimizer: Any = None
        self.schedule: Any = None

    def _window(self, n: int) -> list[int]:
        ids = self.rng.choice(self.prompts)
        start = self.rng.randrange(len(ids) - n) if len(ids) > n else 0
        return list(ids[start : start + n])

    def batch(self, size: int) -> tuple[list[list[int]], list[list[int]]]:
        """``size`` (sequence, loss mask) pairs: text, window, text, window; the mask marks the repeat's tokens
        after its first."""
        seqs, masks = [], []
        for _ in range(size):
            window = self._window(self.rng.randint(8, SPAN))
            before, between = (
                self._window(self.rng.randint(0, GAP)),
                self._window(self.rng.randint(0, GAP // 2)),
            )
            seqs.append(before + window + between + window)
            masks.append([0] * (len(before) + len(window) + len(between) + 1) + [1] * (len(window) - 1))
        return seqs, masks

    def loss(self, size: int = 8) -> tuple[Any, float]:
        """(mean NLL, greedy next-token accuracy) on the repeats of ``size`` fresh sequences."""
        import torch

        seqs, masks = self.batch(size)
        width = max(map(len, seqs))
        ids = torch.tensor([s + [self.pad] * (width - len(s)) for s in seqs])
        attention = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs])
        weight = torch.tensor([m + [0] * (width - len(m)) for m in masks], dtype=torch.float)[:, 1:]
        logits = self.model(input_ids=ids, attention_mask=attention).logits[:, :-1]
        nll = torch.nn.functional.cross_entropy(
            logits.float().reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1), reduction="none"
        ).view(len(seqs), -1)
        total = weight.sum().clamp(min=1.0)
        accuracy = ((logits.argmax(-1) == ids[:, 1:]).float() * weight).sum() / total
        return (nll * weight).sum() / total, accuracy.item()

    def step(self) -> float:
        """One optimizer step on a fresh batch of 8; returns its loss."""
        import torch

        if self.optimizer is None:
            self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=self.lr)
            self.schedule = torch.optim.lr_scheduler.LambdaLR(
                self.optimizer, lambda s: min(1.0, (s + 1) / 20)
            )
        self.model.train()
        loss, _ = self.loss()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.schedule.step()
        self.optimizer.zero_grad()
        return loss.item()

    def accuracy(self, size: int = 16) -> float:
        """Greedy accuracy on the repeats of ``size`` fresh sequences (no gradient)."""
        import torch

        with torch.no_grad():
            return self.loss(size)[1]
