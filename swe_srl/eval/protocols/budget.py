"""The repair prompt's input budget (SWE-RL's ``repair.py: construct_topn_file_context``), counted as SWE-RL counts
it: each shown file's ``### path`` line and text through the model's tokenizer (``utils/misc.py: count_hf_tokens``:
``len(tokenizer.encode(text))``). The tokenizer: ``--tokenizer NAME_OR_PATH`` when given, else an ``hf:`` policy's
own, else a served model's name when a tokenizer of that name loads from disk (a path, or the Hugging Face cache;
never a download); only where none loads, an estimate of 4 bytes a token. The record names which was used.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from swe_srl.errors import ConfigError

ESTIMATE = "estimate: 4 bytes a token (no tokenizer could be loaded; pass --tokenizer NAME_OR_PATH)"


@dataclass(frozen=True)
class BudgetCounter:
    """Counts a shown file's tokens; ``source`` says with what (recorded with each instance)."""

    count: Callable[[str], int]
    source: str


def estimate(text: str) -> int:
    return (len(text.encode()) + 3) // 4


@functools.lru_cache(maxsize=4)
def load_tokenizer(name: str, *, local_only: bool = False) -> Any:
    """The tokenizer ``name`` (a folder or a Hugging Face id), once a process; one clear error when it cannot be
    loaded. ``local_only``: from disk only (a path or the cache), never the network."""
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(name, local_files_only=local_only)
    except Exception as exc:  # transformers raises OSError, ValueError, HFValidationError, ... for a bad name
        raise ConfigError(f"--tokenizer {name!r}: cannot load a tokenizer ({type(exc).__name__}: "
                          f"{str(exc).splitlines()[0][:200] if str(exc) else ''})") from None  # fmt: skip


def _encoded(tokenizer: Any) -> Callable[[str], int]:
    return lambda text: len(tokenizer.encode(text))


def budget_counter(settings: Any, policy: Any) -> BudgetCounter:
    """How ``settings``' run counts the repair budget for ``policy`` (see the module's docstring)."""
    if settings.tokenizer:
        return BudgetCounter(_encoded(load_tokenizer(settings.tokenizer)), f"tokenizer {settings.tokenizer}")
    own = getattr(policy, "tokenizer", None)
    if own is not None and hasattr(own, "encode"):
        return BudgetCounter(_encoded(own), f"tokenizer of {getattr(policy, 'name', 'the policy')}")
    served = getattr(policy, "model", None) if isinstance(getattr(policy, "model", None), str) else None
    if served:
        try:
            return BudgetCounter(_encoded(load_tokenizer(served, local_only=True)), f"tokenizer {served}")
        except ConfigError:
            pass
    return BudgetCounter(estimate, ESTIMATE)


def within_budget(
    paths: list[str], contents: Mapping[str, str], count: Callable[[str], int], budget: int
) -> tuple[list[str], list[str]]:
    """(the paths shown, those left out): each ``### path`` + text in turn, skipped when it would take the total
    past ``budget`` (a later, smaller file may still fit); when none fits, the first is shown whole. A path
    named twice is counted and shown twice, as SWE-RL's loop does."""
    shown, left_out, used, counted = [], [], 0, {}
    for path in paths:
        if path not in counted:
            counted[path] = count(f"### {path}\n{contents[path]}")
        if used + counted[path] > budget:
            left_out.append(path)
        else:
            shown.append(path)
            used += counted[path]
    if not shown and paths:
        return [paths[0]], [p for p in paths[1:] if p != paths[0]]
    return shown, left_out
