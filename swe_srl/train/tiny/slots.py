"""Slotted names: how the tiny policy copies names it has never seen (``tiny.slots``), and its view
(:class:`SlotView`: rows, targets, outputs and rewards through slots).

A small model trained from scratch on two libraries writes the names it memorised there (``toolz/itertoolz.py``,
``tests/test_parse.py::test_datetimes``) and copies none from its prompt, so on a held-out library every path and test
id it writes is wrong (docs/experiments.md). Slotting is the classic answer for copying out-of-vocabulary words (entity
anonymisation; a pointer network's extended vocabulary): every code name the prompt holds — its ``.py`` paths, each
whole (``tabulate/__init__.py`` is one name, so a package's file is written as the prompt shows it, not as the train
libraries' layout suggests), the other words of its paths and test ids, the functions and classes its oracle windows
define — becomes a slot token ``<n0>``, ``<n1>``, …, the paths first, each group numbered by first appearance,
everywhere but in the system prompt. The policy reads and writes slots; its output is mapped back to the names
(:func:`unslot`) before any reward sees it. Which slot holds the test file is then a matter of where it stands in the
problem statement, learnable on the train libraries, instead of a name to recall.

Only the prompt picks the names (never the expert's action), by the same rule on every split. A slotted policy is
one whose tokenizer holds the slot tokens (:func:`uses_slots`): the tiny model built with ``tiny.slots``, and every
checkpoint trained from it; real models (``--model``) have none and see the plain text.
"""

from __future__ import annotations

import builtins
import json
import keyword
import re
from collections.abc import Mapping, Sequence
from typing import Any

from swe_srl.core.view import Messages, PlainView
from swe_srl.rewards.trl import MappedReward

GENERIC = frozenset(keyword.kwlist) | frozenset(dir(builtins))
"""Python's own words: never a slot (nor a renamed name: :mod:`swe_srl.train.tiny.augment`)."""
SLOTS = 32
"""Slot tokens ``<n0>`` … ``<n31>``; a prompt's names past the 32nd stay as they are."""
TOKENS = tuple(f"<n{i}>" for i in range(SLOTS))
_SLOT = re.compile(r"<n(\d+)>")
_PATH = re.compile(r"[\w./-]*\w\.py\b")
_TEST_ID = re.compile(r"::(\w+)")
_DEFINED = re.compile(r"\b(?:def|class)\s+([A-Za-z_]\w+)")
_WORD = re.compile(r"[A-Za-z_]\w{2,}")
_ANY_WORD = re.compile(r"(?<!\w)\w+(?!\w)")
_SHARED = frozenset({"testbed", "tests"})
"""Path words most repositories share (the checkout's root, the usual test folder): never slotted."""


def _slottable(name: str) -> bool:
    """Whether ``name`` may be a slot: no Python keyword or builtin, dunder or :data:`_SHARED` path word."""
    return name not in GENERIC and name not in _SHARED and not name.startswith("__")


def _checkout_paths(found: Sequence[str]) -> list[str]:
    """The ``.py`` paths ``found`` (as :data:`_PATH` matched them, in order), relative to the checkout
    (``/testbed/``, ``./`` dropped), once each; none whose words are all unslottable (``__init__.py``)."""
    paths = (p.removeprefix("/testbed/").removeprefix("./").lstrip("/") for p in found)
    return list(dict.fromkeys(p for p in paths if any(map(_slottable, _WORD.findall(p.removesuffix(".py"))))))


def slot_names(text: str) -> list[str]:
    """The code names ``text`` holds (at most :data:`SLOTS`): first its ``.py`` paths, each whole and relative to
    the checkout, then the words of those paths, the test names of its test ids (``::name``) and the names it defines
    (``def``/``class``) that stand outside those paths, each group in order of first appearance; no Python keyword
    or builtin, dunder or :data:`_SHARED` path word. A path is one slot, so a file the prompt shows is written back
    as it stands there (``tabulate/__init__.py``), whatever its layout."""
    found = _PATH.findall(text)
    paths = _checkout_paths(found)
    names = {w for path in found for w in _WORD.findall(path.removesuffix(".py"))}
    names |= set(_TEST_ID.findall(text)) | set(_DEFINED.findall(text))
    names = {n for n in names if _slottable(n)}
    paths = paths[:SLOTS]
    rest = _replacer(paths)(text) if paths else text  # a word only inside a slotted path needs no slot
    first: dict[str, int] = {}
    for match in _ANY_WORD.finditer(rest):
        first.setdefault(match.group(0), match.start())
    words = sorted((n for n in names if n in first), key=first.__getitem__)
    return [*paths, *words][:SLOTS]


def _replacer(names: Sequence[str]):
    table = {name: TOKENS[i] for i, name in enumerate(names)}
    pattern = re.compile(
        r"(?<!\w)(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + r")(?!\w)"
    )
    return lambda text: pattern.sub(lambda m: table[m.group(1)], text)


def slot_messages(messages: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """(``messages`` with their code names as slot tokens everywhere but in the system prompt, the JSON map slot →
    name). Numbered by first appearance, so a conversation that grows by turns keeps its earlier slots."""
    text = "\n".join(str(m["content"]) for m in messages if m["role"] != "system")
    names = slot_names(text)
    if not names:
        return list(messages), "{}"
    sub = _replacer(names)
    shown = [m if m["role"] == "system" else {**m, "content": sub(str(m["content"]))} for m in messages]
    return shown, json.dumps({TOKENS[i]: n for i, n in enumerate(names)})


def slotted(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its prompt slotted (:func:`slot_messages`) and ``slots`` (JSON: slot → name) to map outputs
    back; ``expert_action`` stays the expert's (rewards compare the mapped-back output with it;
    :func:`policy_action` is the slotted target)."""
    prompt, slots = slot_messages(row["prompt"])
    return {**row, "prompt": prompt, "slots": slots}


def policy_action(row: dict[str, Any]) -> str:
    """The expert action as the policy writes it: slotted where the row is (its names as slot tokens)."""
    action = str(row["expert_action"])
    names = list(json.loads(row["slots"]).values()) if row.get("slots") else []
    return _replacer(names)(action) if names else action


def unslot(text: str, slots: str | dict[str, str] | None) -> str:
    """``text`` with every slot token of ``slots`` (JSON or dict: slot → name) put back as its name; unknown slots
    stay as written."""
    table = json.loads(slots) if isinstance(slots, str) else (slots or {})
    return _SLOT.sub(lambda m: table.get(m.group(0), m.group(0)), text) if table else text


def uses_slots(tokenizer: Any) -> bool:
    """Whether ``tokenizer``'s policy reads and writes slots (its vocabulary holds the slot tokens)."""
    return TOKENS[0] in tokenizer.get_vocab()


def unslotted_outputs(outputs: Sequence[str], rows: Sequence[dict[str, Any]]) -> list[str]:
    """The policy's ``outputs`` on ``rows`` as the reward scores them (slots mapped back; unchanged for plain rows)."""
    return [unslot(o, r.get("slots")) for o, r in zip(outputs, rows, strict=True)]


class UnslottedReward(MappedReward):
    """For a slotted policy: each completion's slots are mapped back to its row's names (the ``slots`` column)."""

    def rewrite(self, text: str, k: int, columns: Mapping[str, Any]) -> str:
        slots = columns.get("slots")
        return unslot(text, slots[k] if slots else None)


class SlotView(PlainView):
    """A slotted policy's view: it reads slotted prompts and writes slots, mapped back before any reward."""

    def rows(self, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        return [slotted(r) for r in rows]

    def action(self, row: dict[str, Any]) -> str:
        return policy_action(row)

    def outputs(self, outputs: Sequence[str], rows: Sequence[dict[str, Any]]) -> list[str]:
        return unslotted_outputs(outputs, rows)

    def reward(self, reward: Any) -> Any:
        return UnslottedReward(reward)

    def show(self, messages: Sequence[dict[str, Any]]) -> tuple[Messages, Any]:
        return slot_messages(messages)

    def read(self, text: str, shown: Any) -> str:
        return unslot(text, shown)

    def refuse_plain_episodes(self) -> str | None:
        return "it is a slotted policy (tiny.slots: it reads and writes slot tokens)"


def view_of(tokenizer: Any) -> PlainView:
    """The view of a policy with ``tokenizer``: :class:`SlotView` when it holds the slot tokens, else plain."""
    return SlotView() if uses_slots(tokenizer) else PlainView()
