"""Oracle files under a token budget: whole files where a sample fits with them, else windows around the gold patch.

A sample fits with a setting when :func:`~swe_srl.core.prompts.fit_messages` makes its prompt fit ``max_tokens`` by
eliding older observations alone (no step omitted, the problem and its files not cut). Settings are tried in
order (``whole``, then :data:`WINDOW_LADDER`); when none fits that way, the last one that fits at all is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import swe_srl.trajectories.sample_file as sf
from swe_srl.core.prompts import TokenCounter, fit_messages
from swe_srl.trajectories.oracle import oracle_setting, patch_windows
from swe_srl.trajectories.schema import Trajectory

WINDOW_LADDER = (20, 10, 5, 0)
"""Context lines of the oracle windows tried, in turn, for a sample that does not fit with whole files."""


class Oracles:
    """Each instance's oracle files per setting: computed once, written once (an ``oracle`` record) when used."""

    def __init__(
        self,
        out: sf.SampleFile,
        files: Mapping[str, Mapping[str, str]] | None,
        patches: Mapping[str, str] | None,
    ) -> None:
        self.out, self.files, self.patches = out, files or {}, patches or {}
        self._contents: dict[tuple[str, str], dict[str, str]] = {}
        self._written: set[tuple[str, str]] = set()

    def settings(self, instance_id: str, windows: list[int | None]) -> list[str]:
        """The settings to try for this instance: windows only where its gold patch is known."""
        return [oracle_setting(True, w) for w in windows if w is None or instance_id in self.patches]

    def contents(self, instance_id: str, setting: str) -> dict[str, str] | None:
        if setting == "none":
            return None
        key = (instance_id, setting)
        if key not in self._contents:
            whole = dict(self.files[instance_id])
            if setting == "whole":
                self._contents[key] = whole
            else:
                context = int(setting.removeprefix("window:"))
                self._contents[key] = patch_windows(self.patches[instance_id], whole, context)
        return self._contents[key]

    def use(self, instance_id: str, setting: str) -> None:
        """Write the setting's ``oracle`` record (once) before the first sample that uses it."""
        files = self.contents(instance_id, setting)
        key = (instance_id, setting)
        if files is not None and key not in self._written:
            self._written.add(key)
            self.out.add_oracle(instance_id, setting, files)


@dataclass(frozen=True)
class Shape:
    """How the samples of one trajectory are shaped (the options of :func:`~swe_srl.trajectories.decompose`)."""

    split: str
    max_tokens: int | None
    window: int | None
    """The history window K (None: every earlier step)."""
    counter: TokenCounter
    settings: list[str]


def fit_sample(
    index: int,
    history: list[dict[str, str]],
    problems: dict[str, dict[str, str]],
    traj: Trajectory,
    shape: Shape,
    oracles: Oracles,
) -> tuple[str, Any] | None:
    """(oracle setting, :func:`~swe_srl.trajectories.sample_file.encode_fit` record) of sample ``index``, by the
    rule above; None when no setting fits ``shape.max_tokens``. ``problems`` caches the problem message per
    setting."""
    chosen, budget, counter = None, int(shape.max_tokens or 0), shape.counter
    for setting in shape.settings:
        if setting not in problems:
            problems[setting] = sf.problem_message(traj.problem, oracles.contents(traj.instance_id, setting))
        prompt = sf.prompt_of(history, problems[setting], index, shape.window)
        fitted = fit_messages(prompt, budget, counter)
        if counter.total(fitted) > budget:
            continue
        chosen = (setting, prompt, fitted)
        if fitted[1] == prompt[1]:  # neither steps omitted nor the problem (with its files) cut
            break
    if chosen is None:
        return None
    setting, prompt, fitted = chosen
    oracles.use(traj.instance_id, setting)
    return setting, sf.encode_fit(prompt, fitted)
