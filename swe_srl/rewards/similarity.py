"""The paper's reward: ``difflib.SequenceMatcher`` ratio (2·M / (|a|+|b|)) of whitespace-normalized action text."""

from __future__ import annotations

from difflib import SequenceMatcher

# SequenceMatcher is quadratic in the worst case; actions longer than this are compared on their first MAX_CHARS
# characters (no real expert action comes close; a 1 MB completion must not stall a training step).
MAX_CHARS = 20_000


def normalize_ws(text: str) -> str:
    """Collapse every run of whitespace to one space and strip the ends."""
    return " ".join(text.split())


def text_ratio(a: str, b: str, limit: int = MAX_CHARS) -> float:
    """``SequenceMatcher(None, a, b).ratio()`` on the first ``limit`` characters of each side (1.0 for two empties)."""
    if a == b:
        return 1.0
    return SequenceMatcher(None, a[:limit], b[:limit]).ratio()


def similarity(expert_action: str, action: str) -> float:
    """Paper-faithful similarity of two actions ∈ [0, 1]."""
    return text_ratio(normalize_ws(expert_action), normalize_ws(action))
