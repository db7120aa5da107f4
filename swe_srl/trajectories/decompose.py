"""Split expert trajectories into SRL step samples.

Sample k: system instructions + problem (+ oracle files) + expert steps 1..k-1 (actions, truncated observations and,
with ``history_thoughts``, the expert's earlier thoughts) → target = expert action k (the expert thought is kept
for reference, never in the target).

Every executed step stays: histories (and the effect layer's replay, :func:`executed_steps`) hold every action the
expert's environment ran, in order. Only the choice of *targets* filters, and every filtered target is counted:

* non-actions are not targets: empty actions (``empty``) and actions made only of ``#`` comments (``comment``);
* with ``merge_similar`` (off by default), a step whose next step is a near-identical action is not a target
  (``merged``): SequenceMatcher ratio of the whitespace-normalized texts above the ratio; the later one is the
  target and its history still shows the earlier one;
* ``submit`` is a target: the SRL paper trains on every action step of the expert, and ending the episode is an
  action the policy must learn.

With a token budget, the oldest observations are elided first (never the problem or the last step); a sample
still over budget is dropped (``over_budget``). Pure and deterministic: same input, same output.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

from swe_srl.core.prompts import TokenCounter, build_messages, fit_messages, format_action, format_observation
from swe_srl.errors import ConfigError
from swe_srl.trajectories.schema import Step, Trajectory


@dataclass
class DecomposeStats:
    """What decomposition did: counts of inputs, outputs, and of everything not made a sample, by reason."""

    trajectories: int = 0
    trajectories_used: int = 0
    steps: int = 0
    samples: int = 0
    merged: int = 0
    """Steps not made targets by ``merge_similar`` (0 when it is off); they stay in later histories."""
    dropped_steps: Counter[str] = field(default_factory=Counter)
    """Steps that are not targets (``empty``, ``comment``), by reason; they stay in later histories."""
    dropped_samples: Counter[str] = field(default_factory=Counter)
    dropped_trajectories: Counter[str] = field(default_factory=Counter)

    def rows(self) -> list[tuple[str, int]]:
        """(label, count) rows for a table, in a stable order; ``merged`` is always shown."""
        rows = [
            ("trajectories", self.trajectories),
            ("trajectories used", self.trajectories_used),
            ("steps", self.steps),
            ("samples", self.samples),
            ("not a target: merged similar", self.merged),
        ]
        for prefix, counter in (
            ("dropped trajectory", self.dropped_trajectories),
            ("not a target", self.dropped_steps),
            ("dropped sample", self.dropped_samples),
        ):
            rows += [(f"{prefix}: {reason}", n) for reason, n in sorted(counter.items())]
        return rows


def _normalize(action: str) -> str:
    return " ".join(action.split())


def is_non_action(action: str) -> str | None:
    """The reason an action is not one (``empty`` / ``comment``), or None for a real action."""
    lines = [line.strip() for line in action.strip().splitlines() if line.strip()]
    if not lines:
        return "empty"
    if all(line.startswith("#") for line in lines):
        return "comment"
    return None


def near_identical(a: str, b: str, threshold: float) -> bool:
    """SequenceMatcher ratio of the whitespace-normalized actions is above ``threshold``."""
    a, b = _normalize(a), _normalize(b)
    if a == b:
        return True
    matcher = SequenceMatcher(None, a, b)
    return (
        matcher.real_quick_ratio() > threshold
        and matcher.quick_ratio() > threshold
        and matcher.ratio() > threshold
    )


def executed_steps(traj: Trajectory) -> list[Step]:
    """Every step the expert's environment executed, in order: what histories show and replay runs.

    Sample ``step`` k indexes this list, so the effect layer restores the state after steps 0..k-1 of it.
    Importers already keep only executed actions (see :mod:`swe_srl.trajectories.formats`), so nothing is removed.
    """
    return list(traj.steps)


def target_steps(steps: list[Step], merge_similar: float | None = None) -> tuple[list[int], Counter[str]]:
    """Indices of the steps that become targets, and the reasons the others do not (``empty``, ``comment``,
    ``merged``: with ``merge_similar``, a step followed by a near-identical action)."""
    targets: list[int] = []
    dropped: Counter[str] = Counter()
    for index, step in enumerate(steps):
        reason = is_non_action(step.action)
        following = steps[index + 1].action if index + 1 < len(steps) else None
        if reason is None and merge_similar is not None and following is not None:
            reason = "merged" if near_identical(step.action, following, merge_similar) else None
        if reason:
            dropped[reason] += 1
        else:
            targets.append(index)
    return targets, dropped


def load_tokenizer(name_or_path: str) -> Any:
    """A tokenizer by HF name/directory (``transformers.AutoTokenizer``) or a ``tokenizer.json`` file."""

    try:
        if name_or_path.endswith(".json"):
            from tokenizers import Tokenizer

            return Tokenizer.from_file(name_or_path)
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(name_or_path)
    except Exception as exc:  # tokenizers raises a bare Exception for a missing file; transformers many types
        raise ConfigError(
            f"cannot load tokenizer {name_or_path!r} ({exc}); pass a HF name, a directory or a tokenizer.json"
        ) from exc


def decompose(
    trajs: Iterable[Trajectory],
    *,
    oracle_files: Mapping[str, Mapping[str, str]] | None = None,
    splits: Mapping[str, str] | None = None,
    tokenizer: Any = None,
    max_tokens: int | None = None,
    observation_chars: int = 2000,
    merge_similar: float | None = None,
    history_thoughts: bool = False,
) -> tuple[list[dict[str, Any]], DecomposeStats]:
    """Trajectories → SRL step samples (records of the cross-team contract) and stats.

    ``oracle_files``: instance_id → {path: content}; when given, every prompt lists them and a trajectory whose
    instance is missing from it is dropped (``missing_oracle_files``). ``splits``: instance_id → split (from a task
    set's ``extra["split"]``); when given, a trajectory of an unknown instance is dropped (``unknown_instance``),
    otherwise split is ``train``. ``tokenizer`` (anything with ``encode``) + ``max_tokens`` set the prompt budget;
    without a tokenizer the budget uses an estimate of 4 characters a token. ``merge_similar`` (a ratio, off by
    default) and ``history_thoughts`` (earlier expert thoughts as ``<think>…</think>`` in the history, off by
    default: the paper's context holds earlier actions, the reasoning is the policy's own) are described above.
    """
    stats = DecomposeStats()
    samples: list[dict[str, Any]] = []
    for traj in trajs:
        stats.trajectories += 1
        stats.steps += len(traj.steps)
        reason = _trajectory_problem(traj, oracle_files, splits)
        if reason:
            stats.dropped_trajectories[reason] += 1
            continue
        steps = executed_steps(traj)
        targets, dropped = target_steps(steps, merge_similar)
        stats.merged += dropped.pop("merged", 0)
        stats.dropped_steps.update(dropped)
        if not targets:
            stats.dropped_trajectories["no_actions"] += 1
            continue
        stats.trajectories_used += 1
        files = dict(oracle_files[traj.instance_id]) if oracle_files is not None else {}
        split = splits[traj.instance_id] if splits is not None else "train"
        counter = TokenCounter(tokenizer)  # per trajectory: its prompts share their long messages
        shape = _Shape(files, split, observation_chars, max_tokens, counter, history_thoughts)
        for sample in _samples(traj, steps, set(targets), shape):
            if sample is None:
                stats.dropped_samples["over_budget"] += 1
            else:
                samples.append(sample)
    stats.samples = len(samples)
    return samples, stats


def _trajectory_problem(
    traj: Trajectory, oracle_files: Mapping[str, Any] | None, splits: Mapping[str, str] | None
) -> str | None:
    if not traj.problem.strip():
        return "no_problem"
    if splits is not None and traj.instance_id not in splits:
        return "unknown_instance"
    if oracle_files is not None and traj.instance_id not in oracle_files:
        return "missing_oracle_files"
    return None


@dataclass(frozen=True)
class _Shape:
    """How the samples of one trajectory are shaped (the options of :func:`decompose`)."""

    files: Mapping[str, str]
    split: str
    observation_chars: int
    max_tokens: int | None
    counter: TokenCounter
    history_thoughts: bool


def _samples(
    traj: Trajectory, steps: list[Step], targets: set[int], shape: _Shape
) -> Iterable[dict[str, Any] | None]:
    counter = shape.counter
    traj_hash = traj.content_hash()
    files = shape.files
    # Same messages as prompts.build_messages, built incrementally so samples share the formatted strings.
    base = build_messages(
        traj.problem, [], oracle_files=files or None, observation_chars=shape.observation_chars
    )
    for index, step in enumerate(steps):
        messages = [dict(m) for m in base] if index in targets else []
        thought = step.thought if shape.history_thoughts else ""
        base.append({"role": "assistant", "content": format_action(step.action, thought)})
        base.append(
            {"role": "user", "content": format_observation(step.observation, shape.observation_chars)}
        )
        if index not in targets:
            continue
        if shape.max_tokens is not None:
            messages = fit_messages(messages, shape.max_tokens, counter)
            if counter.total(messages) > shape.max_tokens:
                yield None
                continue
        yield {
            "prompt": messages,
            "expert_action": step.action.strip(),
            "expert_thought": step.thought.strip(),
            "instance_id": traj.instance_id,
            "step": index,
            "num_steps": len(steps),
            "trajectory_hash": traj_hash,
            "split": shape.split,
            "oracle_files": list(files),
        }
