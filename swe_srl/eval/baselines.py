"""Trivial baselines for held-out SRL step samples, and paired bootstrap intervals against them.

A learning claim is a comparison on the test split, sample by sample, with the policy's output and each baseline's
action scored by the same reward. The baselines need no model:
- ``always_ls``, ``always_submit``, ``always_git_diff``: one fixed action for every sample;
- ``copy_previous``: the expert's previous action in the same trajectory (``ls`` at step 0);
- ``frequent_at_step``: the most frequent training action at the same step index (the most frequent training
  action overall where the training split has no sample at that index).
Each baseline answers in the policy's format (an empty ``<think></think>`` then the action), so its score is the
action's.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from swe_srl.core.actions import format_output

FIXED = {"always_ls": "ls", "always_submit": "submit", "always_git_diff": "git diff"}
BASELINES = (*FIXED, "copy_previous", "frequent_at_step")


def _most_common(actions: Sequence[str]) -> str:
    """The most frequent action; ties go to the lexicographically first, so the choice is deterministic."""
    counts = Counter(actions)
    return min(counts, key=lambda a: (-counts[a], a))


def baseline_actions(
    train_rows: Sequence[Mapping[str, Any]], test_rows: Sequence[Mapping[str, Any]]
) -> dict[str, list[str]]:
    """name → one action per test row (in order), for every baseline in :data:`BASELINES`."""
    by_step: dict[int, list[str]] = {}
    for row in train_rows:
        by_step.setdefault(int(row["step"]), []).append(str(row["expert_action"]))
    overall = _most_common([a for actions in by_step.values() for a in actions]) if by_step else "ls"
    frequent = {step: _most_common(actions) for step, actions in by_step.items()}
    expert_at = {
        (str(r["trajectory_hash"]), int(r["step"])): str(r["expert_action"])
        for r in (*train_rows, *test_rows)
    }
    out: dict[str, list[str]] = {name: [action] * len(test_rows) for name, action in FIXED.items()}
    out["copy_previous"] = [
        expert_at.get((str(r["trajectory_hash"]), int(r["step"]) - 1), "ls") if int(r["step"]) > 0 else "ls"
        for r in test_rows
    ]
    out["frequent_at_step"] = [frequent.get(int(r["step"]), overall) for r in test_rows]
    return out


def baseline_outputs(actions: Sequence[str]) -> list[str]:
    """The baselines' actions as policy outputs (empty reasoning, then the action)."""
    return [format_output("", action) for action in actions]


def paired_bootstrap(
    ours: Sequence[float], theirs: Sequence[float], *, samples: int = 2000, seed: int = 0
) -> dict[str, float]:
    """Mean of ``ours − theirs`` over paired samples and its 95% percentile bootstrap interval."""
    if len(ours) != len(theirs) or not ours:
        raise ValueError(
            f"paired_bootstrap needs two equally long, non-empty lists ({len(ours)} vs {len(theirs)})"
        )
    diffs = [a - b for a, b in zip(ours, theirs, strict=True)]
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(samples))
    return {
        "mean_diff": sum(diffs) / n,
        "low": means[int(0.025 * (samples - 1))],
        "high": means[int(0.975 * (samples - 1))],
    }


def compare(
    final: Sequence[float], others: Mapping[str, Sequence[float]], *, margin: float = 0.05, seed: int = 0
) -> dict[str, dict[str, float | bool]]:
    """For every other policy/baseline: its mean, the paired (final − it) interval, and whether final beats it by
    ``margin`` with the interval above 0."""
    out: dict[str, dict[str, float | bool]] = {}
    for name, scores in others.items():
        interval = paired_bootstrap(final, scores, seed=seed)
        out[name] = {
            "mean": sum(scores) / len(scores),
            **interval,
            "beats": interval["mean_diff"] >= margin and interval["low"] > 0,
        }
    return out
