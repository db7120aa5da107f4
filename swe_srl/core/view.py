"""How a policy sees the task: what it reads for a prompt and what its output means as an action.

Most policies read the prompt as it is and write actions as they are (:class:`PlainView`). A policy with its own
vocabulary for names (the tiny demo model's slots: ``swe_srl.train.tiny.slots``) subclasses it; training and
``hf:`` evaluation take the view from their caller instead of asking what kind of model they hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Messages = list[dict[str, Any]]


class PlainView:
    """The identity view: prompts, targets and outputs as they are."""

    def rows(self, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Sample rows as the policy reads them."""
        return list(rows)

    def action(self, row: dict[str, Any]) -> str:
        """A row's expert action as the policy writes it (its SFT target)."""
        return str(row["expert_action"])

    def outputs(self, outputs: Sequence[str], rows: Sequence[dict[str, Any]]) -> list[str]:
        """The policy's outputs on (viewed) ``rows`` as the reward scores them."""
        return list(outputs)

    def reward(self, reward: Any) -> Any:
        """A reward function over (viewed) dataset rows that scores the outputs as actions."""
        return reward

    def show(self, messages: Sequence[dict[str, Any]]) -> tuple[Messages, Any]:
        """(one conversation as the policy reads it, what :meth:`read` needs to map its output back)."""
        return list(messages), None

    def read(self, text: str, shown: Any) -> str:
        """One output on a conversation :meth:`show` returned, as an action."""
        return text

    def refuse_plain_episodes(self) -> str | None:
        """Why this policy cannot play episodes that show it plain text (None: it can)."""
        return None


PLAIN = PlainView()
