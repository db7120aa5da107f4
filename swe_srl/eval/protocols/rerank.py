"""Reranking the candidate patches of one instance (``--candidates N``): candidates whose edited files are the same
after normalization (the Python AST, which drops comments and formatting) are one patch; the patch most candidates
agree on wins, ties going to the earliest. Empty patches never win."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Mapping


def normalized(new: Mapping[str, str]) -> str:
    """The key of a candidate: each edited file's path and normalized new content (empty: no edit)."""
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
