"""The training-curves PNG (``training_curves.png``): a 3×3 grid read at a glance.

Rows: the reward (train and held-out greedy), its layers, the dynamic-sampling kept ratio; KL, entropy, completion
length; the format-error rate and, once training ended, the held-out report: each policy's and baseline's mean under
both rewards, and the final policy minus each with its paired 95% interval. A panel with nothing logged says so.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

from swe_srl.paths import atomic_write_bytes

LAYERS = "reward_components/"
KEPT = "dynamic_sampling/kept_ratio"
TRAIN_PANELS = (
    ("reward", "mean reward", "reward"),
    ("layers", "reward layers (train)", "layer mean"),
    (KEPT, "dynamic sampling: kept ratio", "groups kept / sampled"),
    ("kl", "KL to reference", "KL"),
    ("entropy", "entropy", "nats per token"),
    ("completions/mean_length", "completion length", "tokens"),
    ("format_error_rate", "format-error rate", "share of completions"),
)
"""(metrics.jsonl key, panel title, y label) of the panels against the step, in grid order."""
HELDOUT_TITLES = ("held-out mean reward", "final − each (paired 95% CI)")
REWARD_COLORS = {"srl": "tab:blue", "layered": "tab:orange"}
STYLE = {"font.size": 10, "axes.titlesize": 12, "axes.labelsize": 10, "legend.fontsize": 8}
SIZE_IN, DPI = (15, 11), 110


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """All records of a metrics.jsonl (missing file → empty list)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def plot_metrics(metrics_path: Path, png_path: Path, heldout: dict[str, Any] | None = None) -> Path:
    """Write the grid of ``metrics_path``'s curves (and ``heldout``, the held-out report) to ``png_path``."""

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with plt.rc_context(STYLE):
        fig = figure(read_metrics(metrics_path), heldout)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=DPI)
        plt.close(fig)
    atomic_write_bytes(png_path, buffer.getvalue())
    return png_path


def figure(records: list[dict[str, Any]], heldout: dict[str, Any] | None = None):
    """The matplotlib figure: the train panels in grid order, then the two held-out panels."""

    import matplotlib.pyplot as plt

    fig, grid = plt.subplots(3, 3, figsize=SIZE_IN)
    axes = list(grid.flat)
    for ax, (key, title, ylabel) in zip(axes, TRAIN_PANELS, strict=False):
        _train_panel(ax, records, key, title, ylabel)
    means_ax, diffs_ax = axes[len(TRAIN_PANELS) :]
    if heldout and heldout.get("means"):
        _heldout_means(means_ax, heldout)
        _heldout_diffs(diffs_ax, heldout)
    else:
        for ax, title in zip((means_ax, diffs_ax), HELDOUT_TITLES, strict=True):
            _empty(ax, title, "written when training ends")
    fig.suptitle(_headline(records), fontsize=13)
    fig.tight_layout()
    return fig


def _series(records: list[dict[str, Any]], key: str) -> tuple[list[float], list[float]]:
    points = [
        (r["step"], r[key]) for r in records if isinstance(r.get(key), int | float) and math.isfinite(r[key])
    ]
    return [p[0] for p in points], [p[1] for p in points]


def _train_panel(ax, records: list[dict[str, Any]], key: str, title: str, ylabel: str) -> None:
    from matplotlib.ticker import MaxNLocator

    if key == "reward" and not any("reward" in r for r in records) and any("loss" in r for r in records):
        key, title, ylabel = "loss", "training loss", "loss"  # a supervised (--method sft) run logs no reward
    keys = sorted({k for r in records for k in r if k.startswith(LAYERS)}) if key == "layers" else [key]
    for name in keys:
        steps, values = _series(records, name)
        if steps:
            label = name.removeprefix(LAYERS) if key == "layers" else "train"
            ax.plot(steps, values, "o-", markersize=3, label=label)
    if key == "reward":
        steps, values = _series(records, "eval/mean_reward")
        if steps:
            ax.plot(steps, values, "s--", markersize=5, label="held-out (greedy)")
    if not ax.lines:
        _empty(ax, title, "not logged")
        return
    if key in ("reward", "layers"):
        ax.legend(loc="best")
    ax.set(title=title, xlabel="step", ylabel=ylabel)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
    ax.grid(alpha=0.3)


def _heldout_means(ax, heldout: dict[str, Any]) -> None:
    """Horizontal bars: one group per policy or baseline (top: final), one bar per reward."""
    names = list(heldout["means"])
    rewards = [m for m in REWARD_COLORS if all(m in heldout["means"][n] for n in names)]
    height = 0.8 / max(1, len(rewards))
    for k, mode in enumerate(rewards):
        ys = [i + (k - (len(rewards) - 1) / 2) * height for i in range(len(names))]
        values = [heldout["means"][n][mode] for n in names]
        ax.barh(ys, values, height, label=mode, color=REWARD_COLORS[mode])
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set(title=f"{HELDOUT_TITLES[0]}: {heldout.get('split', 'test')} split, {heldout['samples']} samples")
    ax.set_xlabel("mean reward")
    ax.legend(loc="best")
    ax.grid(axis="x", alpha=0.3)


def _heldout_diffs(ax, heldout: dict[str, Any]) -> None:
    """final − each policy or baseline under each reward, the paired bootstrap interval as error bars; the learning
    target (``margin``) as a dotted line."""
    final_vs = heldout.get("final_vs") or {}
    names = [n for n in heldout["means"] if any(n in final_vs.get(m, {}) for m in REWARD_COLORS)]
    if not names:
        _empty(ax, HELDOUT_TITLES[1], "no held-out samples")
        return
    rewards = [m for m in REWARD_COLORS if m in final_vs]
    height = 0.8 / len(rewards)
    for k, mode in enumerate(rewards):
        cells = [final_vs[mode][n] for n in names]
        ys = [i + (k - (len(rewards) - 1) / 2) * height for i in range(len(names))]
        diffs = [c["mean_diff"] for c in cells]
        spread = [[d - c["low"] for d, c in zip(diffs, cells, strict=True)],
                  [c["high"] - d for d, c in zip(diffs, cells, strict=True)]]  # fmt: skip
        ax.barh(ys, diffs, height, xerr=spread, capsize=3, label=mode, color=REWARD_COLORS[mode])
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.axvline(0, color="black", linewidth=0.8)
    if "margin" in heldout:
        ax.axvline(heldout["margin"], color="gray", linestyle=":", label=f"target +{heldout['margin']:g}")
    ax.set(title=HELDOUT_TITLES[1], xlabel="final mean − its mean")
    ax.legend(loc="best")
    ax.grid(axis="x", alpha=0.3)


def _empty(ax, title: str, why: str) -> None:
    ax.set_title(title)
    ax.text(0.5, 0.5, why, ha="center", va="center", transform=ax.transAxes, color="gray", fontsize=11)
    ax.set_xticks([])
    ax.set_yticks([])


def _headline(records: list[dict[str, Any]]) -> str:
    steps = [r["step"] for r in records if isinstance(r.get("step"), int)]
    return f"training curves: {max(steps) if steps else 0} steps"
