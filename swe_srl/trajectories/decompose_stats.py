"""What decomposition did: counts of inputs and outputs, and of everything not made a sample, by reason and by
instance (the ``swe-srl decompose`` tables and summary line)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


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
    samples_by_instance: Counter[str] = field(default_factory=Counter)
    dropped_by_instance: dict[str, Counter[str]] = field(default_factory=dict)
    """instance_id → reasons its samples were dropped (``over_budget``) → count."""
    oracle: Counter[str] = field(default_factory=Counter)
    """Samples by oracle setting (``none``, ``whole``, ``window:N``)."""
    splits: Counter[str] = field(default_factory=Counter)
    """Samples by split (``train``, ``dev``, ``test``)."""
    held_out_trajectories: int = 0
    """Trajectories drawn for the held-out split (``holdout_trajectories``)."""
    held_out_alongside: int = 0
    """Trajectories held out because they share a drawn trajectory's instance."""

    def drop(self, instance_id: str, reason: str) -> None:
        self.dropped_samples[reason] += 1
        self.dropped_by_instance.setdefault(instance_id, Counter())[reason] += 1

    def instance_rows(self) -> list[tuple[str, int, str]]:
        """(instance, samples kept, drops by reason) of every instance that lost samples, most lost first."""
        lost = sorted(self.dropped_by_instance.items(), key=lambda item: (-sum(item[1].values()), item[0]))
        return [
            (iid, self.samples_by_instance[iid], ", ".join(f"{r} {n}" for r, n in sorted(reasons.items())))
            for iid, reasons in lost
        ]

    def summary(self) -> str:
        """One line: which instances lost samples (and how many lost them all)."""
        if not self.dropped_by_instance:
            return "no instance lost samples"
        rows = self.instance_rows()
        emptied = sum(1 for _, kept, _ in rows if kept == 0)
        shown = "; ".join(f"{iid}: {reasons} (kept {kept})" for iid, kept, reasons in rows[:10])
        more = f"; and {len(rows) - 10} more" if len(rows) > 10 else ""
        return f"{len(rows)} instances lost samples, {emptied} lost all: {shown}{more}"

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
            ("samples with oracle", self.oracle),
            ("samples in split", self.splits),
        ):
            rows += [(f"{prefix}: {reason}", n) for reason, n in sorted(counter.items(), key=_order)]
        if self.held_out_trajectories:
            rows.append(("held-out trajectories drawn", self.held_out_trajectories))
            rows.append(("held out with them (same instance)", self.held_out_alongside))
        if self.dropped_by_instance:
            rows.append(("instances losing samples", len(self.dropped_by_instance)))
            rows.append(("instances losing all", sum(1 for r in self.instance_rows() if r[1] == 0)))
        return rows


def _order(item: tuple[str, int]) -> tuple[str, int]:
    """Reasons alphabetically; oracle settings ``window:N`` by decreasing N (after ``none`` and ``whole``)."""
    reason = item[0]
    if reason.startswith("window:") and reason[7:].isdigit():
        return "window:", -int(reason[7:])
    return reason, 0
