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

``history`` (K, the SRL paper's 2; None: every earlier step) shows only the last K steps in each prompt, with one
line after the problem saying how many earlier steps are not shown (:func:`~swe_srl.core.prompts.window_messages`);
K goes in the header and every reader applies it. The sample's ``step`` stays its index in the whole trajectory, so
the effect layer still restores the state after every earlier step. ``holdout_trajectories`` N puts N whole
trajectories (a seeded draw, :mod:`~swe_srl.trajectories.holdout`) in the ``test`` split.

With a token budget, the oldest observations are elided first (never the problem or the last step); a sample
still over budget is dropped (``over_budget``), counted per instance (:attr:`DecomposeStats.dropped_by_instance`).
With oracle files and a budget, a sample whose prompt needs more than eliding observations to fit with whole files
(older steps omitted or the files cut) is retried with windows around the gold patch's hunks
(:data:`WINDOW_LADDER` lines of context, in turn); the first that fits by eliding alone is kept, else the smallest
window if it fits at all. ``oracle_window`` forces one window size. Pure and deterministic: same input, same output.

The result is a :class:`~swe_srl.trajectories.sample_file.SampleFile`: each trajectory and each instance's oracle
files once, one compact record per sample; prompts are built when it is read (see that module for the format).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from difflib import SequenceMatcher
from typing import Any

import swe_srl.trajectories.sample_file as sf
from swe_srl.core.prompts import TokenCounter
from swe_srl.errors import ConfigError
from swe_srl.trajectories.decompose_stats import DecomposeStats
from swe_srl.trajectories.holdout import HOLDOUT_SPLIT, choose_holdout
from swe_srl.trajectories.oracle import oracle_setting
from swe_srl.trajectories.oracle_fit import WINDOW_LADDER, Oracles, Shape, fit_sample
from swe_srl.trajectories.schema import Step, Trajectory


def _normalize(action: str) -> str:
    return " ".join(action.split())


def is_non_action(action: str) -> str | None:
    """The reason an action is not one (``empty`` / ``comment``), or None for a real action."""
    text = action.strip()
    if text and not text.startswith("#"):  # its first non-blank line is no comment
        return None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
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
    oracle_patches: Mapping[str, str] | None = None,
    oracle_window: int | None = None,
    splits: Mapping[str, str] | None = None,
    tokenizer: Any = None,
    max_tokens: int | None = None,
    observation_chars: int = 2000,
    merge_similar: float | None = None,
    history_thoughts: bool = False,
    history: int | None = None,
    holdout_trajectories: int = 0,
    holdout_seed: int = 0,
) -> tuple[sf.SampleFile, DecomposeStats]:
    """Trajectories → SRL step samples (the samples file of the cross-team contract) and stats.

    ``oracle_files``: instance_id → {path: content}; when given, every prompt lists them and a trajectory whose
    instance is missing from it is dropped (``missing_oracle_files``). ``oracle_patches``: instance_id → gold patch,
    for windows (``oracle_window`` forces windows of that many context lines; with ``max_tokens`` and no
    ``oracle_window``, windows are the fallback of samples that do not fit with whole files). ``splits``:
    instance_id → split (from a task set's ``extra["split"]``); when given, a trajectory of an unknown instance is
    dropped (``unknown_instance``), otherwise split is ``train``. ``tokenizer`` (anything with ``encode``) +
    ``max_tokens`` set the prompt budget; without a tokenizer the budget uses an estimate of 4 characters a token.
    ``merge_similar`` (a ratio, off by default) and ``history_thoughts`` (earlier expert thoughts as
    ``<think>…</think>`` in the history, off by default: the paper's context holds earlier actions, the reasoning is
    the policy's own), ``history`` and ``holdout_trajectories`` (with ``holdout_seed``) are described above.
    """
    if history is not None and history < 0:
        raise ConfigError(f"--history {history}: give a number of earlier steps >= 0 (or leave it out: all)")
    windows = [oracle_window] if oracle_window is not None else [None]
    if oracle_window is None and max_tokens is not None and oracle_patches is not None:
        windows += list(WINDOW_LADDER)
    options = {"history": history} if history is not None else {}
    if holdout_trajectories:
        options.update(holdout_trajectories=holdout_trajectories, holdout_seed=holdout_seed)
    out = sf.SampleFile(
        sf.header_record(
            observation_chars=observation_chars,
            history_thoughts=history_thoughts,
            oracle=_oracle_label(oracle_files is not None, oracle_window, windows),
            max_tokens=max_tokens,
            tokenizer=_tokenizer_name(tokenizer),
            **options,
        )
    )
    stats, oracles, trajs = DecomposeStats(), Oracles(out, oracle_files, oracle_patches), list(trajs)

    def problem(traj: Trajectory) -> str | None:
        reason = _trajectory_problem(traj, oracle_files, splits)
        if reason is None and oracle_window is not None and traj.instance_id not in (oracle_patches or {}):
            reason = "missing_oracle_patch"
        return reason

    def split(traj: Trajectory) -> str:
        return splits[traj.instance_id] if splits is not None else "train"

    def gives_train_samples(traj: Trajectory) -> bool:
        usable = problem(traj) is None and split(traj) == "train"
        return usable and bool(target_steps(executed_steps(traj), merge_similar)[0])

    held = choose_holdout(trajs, holdout_trajectories, gives_train_samples, holdout_seed)
    stats.held_out_trajectories, stats.held_out_alongside = held.drawn, held.alongside
    for traj in trajs:
        stats.trajectories += 1
        stats.steps += len(traj.steps)
        reason = problem(traj)
        steps = executed_steps(traj)
        targets, dropped = target_steps(steps, merge_similar) if reason is None else ([], Counter())
        stats.merged += dropped.pop("merged", 0)
        stats.dropped_steps.update(dropped)
        if reason or not targets:
            stats.dropped_trajectories[reason or "no_actions"] += 1
            continue
        shape = Shape(
            split=HOLDOUT_SPLIT if traj.instance_id in held.instances else split(traj),
            max_tokens=max_tokens,
            window=history,
            counter=TokenCounter(tokenizer),  # per trajectory: its prompts share their long messages
            settings=oracles.settings(traj.instance_id, windows) if oracle_files is not None else ["none"],
        )
        _add_trajectory(out, traj, steps, targets, shape, oracles, stats, observation_chars, history_thoughts)
    return out, stats


def _oracle_label(oracle_files: bool, oracle_window: int | None, windows: list[int | None]) -> str:
    return (
        "whole+windows" if len(windows) > 1 and oracle_files else oracle_setting(oracle_files, oracle_window)
    )


def _add_trajectory(
    out: sf.SampleFile,
    traj: Trajectory,
    steps: list[Step],
    targets: list[int],
    shape: Shape,
    oracles: Oracles,
    stats: DecomposeStats,
    observation_chars: int,
    history_thoughts: bool,
) -> None:
    """The trajectory record and its samples; the record is taken back when every sample is over budget."""
    stats.trajectories_used += 1
    record = out.add_trajectory(traj, observation_chars, history_thoughts)
    position, kept = len(out.records) - 1, 0
    for sample in _samples(traj, steps, targets, record, shape, oracles):
        if sample is None:
            stats.drop(traj.instance_id, "over_budget")
            continue
        out.records.append(sample)
        kept += 1
        stats.samples_by_instance[traj.instance_id] += 1
        stats.oracle[sample["oracle"]] += 1
        stats.splits[sample["split"]] += 1
    if not kept:  # every sample over budget: the trajectory record serves none
        del out.records[position]
    stats.samples += kept


def _tokenizer_name(tokenizer: Any) -> str | None:
    if tokenizer is None:
        return None
    return str(getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__)


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


def _samples(
    traj: Trajectory,
    steps: list[Step],
    targets: list[int],
    record: dict[str, Any],
    shape: Shape,
    oracles: Oracles,
) -> Iterable[dict[str, Any] | None]:
    base = {
        "kind": "sample",
        "instance_id": traj.instance_id,
        "trajectory_hash": record["trajectory_hash"],
        "traj": record["ref"],
        "split": shape.split,
        "num_steps": len(steps),
    }
    history = sf.history_messages(record) if shape.max_tokens is not None else []
    problems: dict[str, dict[str, str]] = {}
    for index in targets:
        step = steps[index]
        sample = {
            **base,
            "step": index,
            "expert_action": step.action.strip(),
            "expert_thought": step.thought.strip(),
            "oracle": shape.settings[0],
        }
        if shape.max_tokens is None:
            oracles.use(traj.instance_id, shape.settings[0])
            yield sample
            continue
        fitted = fit_sample(index, history, problems, traj, shape, oracles)
        if fitted is None:
            yield None
            continue
        sample["oracle"], fit = fitted
        if fit is not None:
            sample["fit"] = fit
        yield sample
