"""Training prompts fitted to the model's context with the one prompt fitter (:func:`core.prompts.fit_messages`)."""

from __future__ import annotations

from typing import Any

from swe_srl.core.prompts import TokenCounter, fit_messages


def fit_rows(rows: list[dict], max_tokens: int, tokenizer: Any) -> list[dict]:
    """Rows whose ``prompt`` messages fit ``max_tokens`` (chat template included); one counter for all rows, so
    the long messages prompts of one trajectory share are tokenized once."""
    counter = TokenCounter(tokenizer)
    return [{**row, "prompt": fit_messages(row["prompt"], max_tokens, counter)} for row in rows]
