"""The gold answers of the one-generation protocols: localization names the files the gold patch edits, repair
writes the gold patch as SEARCH/REPLACE edits (:func:`swe_srl.core.diff_edits.diff_to_edits`). ``--policy gold``
answers so, and the tests' OpenAI-compatible server serves the same answers through the real client."""

from __future__ import annotations

from typing import TYPE_CHECKING

from swe_srl.core.actions import THINK_CLOSE, THINK_OPEN
from swe_srl.core.diff_edits import diff_to_edits
from swe_srl.core.search_replace import format_edits
from swe_srl.eval.protocols.prompts import Messages, is_localization
from swe_srl.eval.protocols.sources import BaseTree, oracle_files

if TYPE_CHECKING:
    from swe_srl.benchmark.instances import Instance


def gold_localization(instance: Instance) -> str:
    """The files the gold patch edits, one per line in a fence."""
    return "```\n" + "\n".join(instance.oracle_files) + "\n```"


def gold_repair(instance: Instance, tree: BaseTree) -> str:
    """The gold patch as SEARCH/REPLACE edits, after a short thought."""
    edits, _ = diff_to_edits(instance.patch, tree.contents(instance.oracle_files))
    return f"{THINK_OPEN}\nApply the reference fix.\n{THINK_CLOSE}\n{format_edits(edits)}"


def gold_answer(messages: Messages, instance: Instance, tree: BaseTree) -> str:
    """The gold answer to a localization or a repair prompt of ``instance`` (a prompt of a ``--prompt-template``
    is a repair prompt when it shows a file the gold patch edits)."""
    prompt = messages[-1]["content"] if messages else ""
    shown = any(
        text.strip() and text.strip() in prompt for text in tree.contents(oracle_files(instance)).values()
    )
    return (
        gold_localization(instance) if is_localization(messages) or not shown else gold_repair(instance, tree)
    )


class GoldEditPolicy:
    """``--policy gold`` under a one-generation protocol (an upper bound for the edit format and the harness)."""

    name = "gold"

    def __init__(self, repos_dir: str | None = None) -> None:
        self.repos_dir = repos_dir
        self.instance: Instance | None = None
        self.tree: BaseTree | None = None

    def reset(self, instance: Instance) -> None:
        self.instance, self.tree = instance, BaseTree(instance, self.repos_dir)

    def generate(self, messages: Messages) -> str:
        assert self.instance is not None and self.tree is not None, "reset(instance) first"
        return gold_answer(messages, self.instance, self.tree)


class EmptyEditPolicy:
    """``--policy empty`` under a one-generation protocol: answers nothing (an empty patch, a lower bound)."""

    name = "empty"

    def reset(self, instance: Instance) -> None:
        pass

    def generate(self, messages: Messages) -> str:
        return ""
