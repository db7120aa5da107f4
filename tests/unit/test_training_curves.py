"""training_curves.png is a 3×3 grid: the train curves (reward with held-out greedy points, one line per reward
layer, kept ratio, KL, entropy, length, format errors) and the held-out means and final − each with its interval."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from swe_srl.eval.baselines import compare  # noqa: E402
from swe_srl.train.plot import HELDOUT_TITLES, TRAIN_PANELS, figure, plot_metrics  # noqa: E402

LAYER_NAMES = ("format", "similarity", "syntax", "semantic", "safe")


def _records(steps: int = 12) -> list[dict]:
    rng = random.Random(0)
    records = [{"step": 0, "eval/mean_reward": 0.21}]
    for step in range(1, steps + 1):
        record = {"step": step, "reward": 0.2 + 0.02 * step, "kl": 0.001 * step, "entropy": 2.0 - 0.05 * step,
                  "completions/mean_length": 60.0 + step, "format_error_rate": 0.5 / step,
                  "dynamic_sampling/kept_ratio": 0.5 + 0.02 * step}  # fmt: skip
        record |= {f"reward_components/{name}": rng.random() for name in LAYER_NAMES}
        records.append(record)
    return [*records, {"step": steps, "eval/mean_reward": 0.4}]


def _heldout(samples: int = 20) -> dict:
    rng = random.Random(1)
    scores = {name: {m: [rng.random() for _ in range(samples)] for m in ("srl", "layered")}
              for name in ("final", "initial", "frequent_at_step", "copy_previous")}  # fmt: skip
    others = [n for n in scores if n != "final"]
    return {
        "split": "test",
        "samples": samples,
        "margin": 0.05,
        "means": {n: {m: sum(v) / samples for m, v in s.items()} for n, s in scores.items()},
        "final_vs": {
            m: compare(scores["final"][m], {n: scores[n][m] for n in others}, margin=0.05)
            for m in ("srl", "layered")
        },
    }


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_the_png_is_a_legible_grid(tmp_path: Path) -> None:
    import matplotlib.image

    png = plot_metrics(_write(tmp_path / "metrics.jsonl", _records()), tmp_path / "curves.png", _heldout())
    height, width = matplotlib.image.imread(png).shape[:2]
    assert 0.5 < height / width < 2 and width >= 1200, (width, height)


def test_every_panel_is_drawn_in_a_three_by_three_grid() -> None:
    fig = figure(_records(), _heldout())
    axes = fig.axes
    assert [ax.get_subplotspec().get_geometry()[:2] for ax in axes] == [(3, 3)] * 9
    titles = [ax.get_title() for ax in axes]
    assert titles[: len(TRAIN_PANELS)] == [title for _, title, _ in TRAIN_PANELS]
    assert titles[-2].startswith(HELDOUT_TITLES[0]) and "20 samples" in titles[-2]
    assert titles[-1] == HELDOUT_TITLES[1]
    reward, layers = axes[0], axes[1]
    assert [line.get_label() for line in reward.lines] == ["train", "held-out (greedy)"]
    assert sorted(line.get_label() for line in layers.lines) == sorted(LAYER_NAMES)
    assert all(ax.get_xlabel() == "step" and ax.get_ylabel() for ax in axes[: len(TRAIN_PANELS)])
    means, diffs = axes[-2], axes[-1]
    assert [t.get_text() for t in means.get_yticklabels()] == [
        "final",
        "initial",
        "frequent_at_step",
        "copy_previous",
    ]
    assert sum(len(c.patches) for c in means.containers) == 4 * 2  # policies × rewards
    bars = [c for c in diffs.containers if getattr(c, "errorbar", None) is not None]
    assert len(bars) == 2 and all(len(c.patches) == 3 for c in bars)  # final − each of the 3 others, with CIs


def test_panels_without_data_say_so_and_sft_plots_its_loss() -> None:
    records = [{"step": s, "loss": 2.0 / s, "sft/loss": 2.0 / s} for s in range(1, 6)]
    axes = figure(records).axes
    assert axes[0].get_title() == "training loss" and len(axes[0].lines) == 1
    assert [t.get_text() for t in axes[3].texts] == ["not logged"]  # KL: an SFT run logs none
    assert all(t.get_text() == "written when training ends" for ax in axes[-2:] for t in ax.texts)
