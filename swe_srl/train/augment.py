"""Renamed copies of training samples, so that a small policy learns to copy test names from the problem statement.

The bundled train split has few distinct failing tests (one per task; every expert seed of a task names the same
one), so a small model can recall "the test of this problem" instead of reading it from the issue text. A renamed
copy replaces each test function the problem statement names (``test_get``) by another plausible test name, made
of words from the training texts' own test names (``test_merge_sorted``), everywhere in the sample at once: the
problem statement, the oracle windows, the earlier actions and their observations, and the expert's target action.
The copy is the same trajectory with a renamed test, so the expert's next action is still right for it, and the new
name can only be known by reading it from the prompt.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

TEST_NAME = re.compile(r"(?<![\w.])test_\w+")
"""A test function's name as pytest ids and issue texts write it (``test_get``; ``test_x[param]``: ``test_x``)."""

_PROBLEM = re.compile(r"<problem_statement>(.*?)</problem_statement>", re.S)


def _problem_tests(row: dict) -> list[str]:
    """The test names the row's problem statement mentions, in order of first mention."""
    for message in row["prompt"]:
        match = _PROBLEM.search(str(message["content"]))
        if match:
            return list(dict.fromkeys(TEST_NAME.findall(match.group(1))))
    return []


def name_words(rows: Sequence[dict]) -> list[str]:
    """The words (``merge``, ``sorted``) of every test name the rows' problem statements mention, sorted."""
    return sorted({w for row in rows for name in _problem_tests(row) for w in name[5:].split("_") if w})


def _new_name(rng: random.Random, words: Sequence[str], taken: set[str]) -> str:
    for _ in range(100):
        name = "test_" + "_".join(rng.sample(list(words), rng.randint(1, min(3, len(words)))))
        if name not in taken:
            return name
    raise ValueError("no unused test name left to draw")


def rename_tests(row: dict, rng: random.Random, words: Sequence[str]) -> dict | None:
    """A copy of ``row`` whose problem-statement test names are replaced everywhere but in the system prompt by new
    ones (None when the problem names no test)."""
    olds = _problem_tests(row)
    if not olds or not words:
        return None
    texts = [str(m["content"]) for m in row["prompt"]] + [str(row["expert_action"])]
    taken = set(olds) | {w for text in texts for w in re.findall(r"\w+", text)}
    mapping: dict[str, str] = {}
    for old in olds:
        mapping[old] = _new_name(rng, words, taken)
        taken.add(mapping[old])
    pattern = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, olds)) + r")(?!\w)")

    def swap(text: str) -> str:
        return pattern.sub(lambda m: mapping[m.group(1)], text)

    prompt = [
        m if m["role"] == "system" else {**m, "content": swap(str(m["content"]))} for m in row["prompt"]
    ]
    return {**row, "prompt": prompt, "expert_action": swap(str(row["expert_action"])), "renamed": mapping}


def renamed_copies(rows: Sequence[dict], copies: int, seed: int = 0) -> list[dict]:
    """``rows`` followed by ``copies`` renamed copies of each row whose problem names a test (words drawn from the
    rows' own test names; deterministic for ``seed``)."""
    if copies <= 0:
        return list(rows)
    rng, words = random.Random(seed), name_words(rows)
    extra = []
    for _ in range(copies):
        for row in rows:
            copy = rename_tests(row, rng, words)
            if copy is not None:
                extra.append(copy)
    return [*rows, *extra]
