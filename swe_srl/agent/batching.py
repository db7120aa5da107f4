"""One batched generation for the turns of episodes that run in threads.

Evaluation runs each episode in its own worker thread (``swe-srl eval --workers N``); a local model shared by those
threads would be called once per turn per episode. :class:`BatchingPolicy` gathers the turns that wait at the same
time and answers them with one ``generate_batch`` of the wrapped policy (:meth:`HFPolicy.generate_batch
<swe_srl.agent.models.HFPolicy.generate_batch>`, left-padded): a caller waits up to ``wait_s`` for others to join,
or until ``max_batch`` turns wait; while a batch runs, the next one gathers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from swe_srl.agent.policies import Messages


class _Turn:
    def __init__(self, messages: Messages) -> None:
        self.messages = messages
        self.done = False
        self.output: str = ""
        self.error: BaseException | None = None


class BatchingPolicy:
    """``policy`` (one with ``generate_batch``) answering concurrent ``generate`` calls in batches. Every other
    attribute (``name``, ``count_tokens``, ``context_tokens``, ``view``, …) is the wrapped policy's."""

    def __init__(self, policy: Any, max_batch: int = 64, wait_s: float = 0.05) -> None:
        self.policy, self.max_batch, self.wait_s = policy, max(1, max_batch), wait_s
        self._cond = threading.Condition()
        self._pending: list[_Turn] = []
        self._running = False
        self.batch_sizes: list[int] = []
        """The size of every batch it generated (for reports and tests)."""

    def __getattr__(self, name: str) -> Any:
        if name == "policy":  # not yet set
            raise AttributeError(name)
        return getattr(self.policy, name)

    def generate_batch(self, batch: Sequence[Messages]) -> list[str]:
        return list(self.policy.generate_batch(batch))

    def generate(self, messages: Messages) -> str:
        turn = _Turn(messages)
        with self._cond:
            self._pending.append(turn)
            self._cond.notify_all()
        deadline = time.monotonic() + self.wait_s
        while True:
            with self._cond:
                while not turn.done:
                    left = deadline - time.monotonic()
                    if not self._running and (left <= 0 or len(self._pending) >= self.max_batch):
                        break  # this caller generates the next batch
                    self._cond.wait(timeout=self.wait_s if self._running or left <= 0 else left)
                if turn.done:
                    return self._result(turn)
                batch, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch :]
                self._running = True
            try:
                self._generate(batch)
            finally:
                with self._cond:
                    self._running = False
                    self._cond.notify_all()

    def _generate(self, batch: list[_Turn]) -> None:
        try:
            outputs = self.policy.generate_batch([t.messages for t in batch])
        except Exception as exc:  # every caller of the batch gets the error
            outputs = [exc] * len(batch)
        self.batch_sizes.append(len(batch))
        with self._cond:
            for turn, output in zip(batch, outputs, strict=True):
                if isinstance(output, BaseException):
                    turn.error = output
                else:
                    turn.output = output
                turn.done = True

    @staticmethod
    def _result(turn: _Turn) -> str:
        if turn.error is not None:
            raise turn.error
        return turn.output
