"""Reranking the candidate patches of one instance (``--candidates N``). Each candidate has a key; the key most
candidates share wins, a tie going to the key that appeared first, and the first candidate with it is chosen. An
empty key (no patch) never wins.

The key (``--rerank``): ``swe-rl`` (the default) is SWE-RL's normalized patch (:mod:`.normalize`; ``rerank.py:
majority_voting`` without its test-based rankers); ``ours`` is each edited file's path and Python AST, so that
comments and formatting do not count, docstrings and added functions' context do."""

from __future__ import annotations

import ast
import functools
from collections import Counter
from collections.abc import Mapping

from swe_srl.eval.protocols.normalize import swerl_key

RERANKS = ("swe-rl", "ours")


def rerank_key(rule: str, old: Mapping[str, str], new: Mapping[str, str]) -> str:
    """The key of a candidate whose edits turn ``old`` into ``new`` (path → text, edited files only)."""
    return _key(rule, tuple(old.items()), tuple(new.items()))


@functools.lru_cache(maxsize=16)  # candidates often repeat an answer: one normalization each
def _key(rule: str, old: tuple[tuple[str, str], ...], new: tuple[tuple[str, str], ...]) -> str:
    return swerl_key(dict(old), dict(new)) if rule == "swe-rl" else normalized(dict(new))


def normalized(new: Mapping[str, str]) -> str:
    """Our key: each edited file's path and normalized new content (empty: no edit)."""
    return "\n".join(f"### {path}\n{_normal(text)}" for path, text in sorted(new.items()))


def _normal(text: str) -> str:
    try:
        return ast.unparse(ast.parse(text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # a 450-term sum recurses past the limit
        return "\n".join(line.rstrip() for line in text.split("\n") if line.strip())


def majority(keys: list[str]) -> tuple[int | None, int]:
    """(index of the first candidate of the most common non-empty key, how many candidates share it);
    ``(None, 0)`` when every key is empty."""
    votes = Counter(k for k in keys if k)
    if not votes:
        return None, 0
    best = max(votes.values())
    index = next(k for k, key in enumerate(keys) if key and votes[key] == best)
    return index, best
