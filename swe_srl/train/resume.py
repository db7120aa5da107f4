"""``--resume``: the run continues where its last checkpoint left it.

TRL/transformers restore the weights, optimizer, scheduler, trainer state and the python/numpy/torch random states.
swe-srl adds what is its own: ``metrics.jsonl`` is cut back to the checkpoint's step (records the interrupted run
wrote after it would be logged twice), the held-out evaluations up to that step come back (summary.json keeps them),
and the dynamic-sampling refill generator is saved in each checkpoint (``refill_state-RANK.json``) and reloaded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from swe_srl.paths import atomic_write_text
from swe_srl.train.callbacks import read_metrics


def checkpoint_step(checkpoint: Path) -> int:
    """The global step a ``checkpoint-N`` directory holds (its trainer_state.json, else N)."""
    state = Path(checkpoint) / "trainer_state.json"
    if state.is_file():
        return int(json.loads(state.read_text(encoding="utf-8"))["global_step"])
    return int(Path(checkpoint).name.rsplit("-", 1)[-1])


def resume_metrics(metrics_path: Path, step: int) -> list[tuple[int, float]]:
    """Drop the records after ``step`` from metrics.jsonl; returns the held-out evaluations up to ``step``."""
    kept = [r for r in read_metrics(metrics_path) if int(r.get("step", 0)) <= step]
    if metrics_path.exists():
        atomic_write_text(metrics_path, "".join(json.dumps(r) + "\n" for r in kept))
    return [(int(r["step"]), float(r["eval/mean_reward"])) for r in kept if "eval/mean_reward" in r]


def _state_path(folder: Path, rank: int) -> Path:
    return folder / f"refill_state-{rank}.json"


class RefillStateCallback(TrainerCallback):
    """Writes the trainer's refill random state into every checkpoint it saves."""

    def __init__(self, trainer: Any) -> None:
        self.trainer = trainer

    def on_save(self, args, state, control, **kwargs):
        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if folder.is_dir():
            rank = self.trainer.accelerator.process_index
            atomic_write_text(_state_path(folder, rank), json.dumps(self.trainer.refill_state()) + "\n")


def restore_refill_state(trainer: Any, checkpoint: Path) -> bool:
    """Load the refill state saved in ``checkpoint`` (False when it has none: a checkpoint from before)."""
    path = _state_path(Path(checkpoint), trainer.accelerator.process_index)
    if not path.is_file():
        return False
    trainer.load_refill_state(json.loads(path.read_text(encoding="utf-8")))
    return True
