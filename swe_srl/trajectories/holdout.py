"""Whole trajectories held out as the validation split (``swe-srl decompose --holdout-trajectories N``).

The SRL paper holds out 30 whole expert trajectories (650 step samples) and scores checkpoints on them. Here the
choice is a seeded draw over the trajectories that would give samples in the train split: each trajectory's rank is
:func:`~swe_srl.benchmark.instances.id_fraction` of ``holdout:<seed>:<trajectory_hash>``, and the N lowest are
chosen. It depends on the trajectories' contents and the seed only (not on their order). Every step of one
instance stays on one side, as with the split rule: a trajectory of an instance already chosen is held out too
(counted apart), so the held-out split may hold more than N trajectories.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from swe_srl.benchmark.instances import id_fraction
from swe_srl.errors import ConfigError
from swe_srl.trajectories.schema import Trajectory

HOLDOUT_SPLIT = "test"
"""The split held-out trajectories get: the one the held-out report and the periodic greedy evaluation decode by
default (``heldout_split``)."""


@dataclass(frozen=True)
class Holdout:
    """The instances whose trajectories are held out, how many trajectories were drawn and how many more came
    along because they share a drawn trajectory's instance."""

    instances: frozenset[str]
    drawn: int
    alongside: int


def choose_holdout(
    trajs: Sequence[Trajectory], count: int, eligible: Callable[[Trajectory], bool], seed: int = 0
) -> Holdout:
    """Draw ``count`` whole trajectories among the ``eligible`` ones (see the module); refuses a count larger than
    the eligible trajectories, naming both. None drawn (``count`` 0): nothing held out, ``eligible`` not called."""
    if count < 0:
        raise ConfigError(f"--holdout-trajectories {count}: give a number of trajectories >= 0")
    if not count:
        return Holdout(frozenset(), 0, 0)
    candidates = [t for t in trajs if eligible(t)]
    if count > len(candidates):
        raise ConfigError(
            f"--holdout-trajectories {count}: only {len(candidates)} trajectories give train samples; "
            f"hold out fewer"
        )
    ranked = sorted(
        candidates, key=lambda t: (id_fraction(f"holdout:{seed}:{t.content_hash()}"), t.instance_id)
    )
    instances = frozenset(t.instance_id for t in ranked[:count])
    total = sum(1 for t in candidates if t.instance_id in instances)
    return Holdout(instances, count, total - count)
