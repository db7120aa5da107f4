"""Monitoring: ``metrics.jsonl`` per logged step, the training-curves PNG (drawn by ``plot.py``) on save and at the
end, held-out greedy evaluation, and a rich progress bar."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from transformers import TrainerCallback

from swe_srl.train.heldout import greedy_outputs
from swe_srl.train.plot import plot_metrics
from swe_srl.train.plot import read_metrics as read_metrics  # re-exported: run.py, resume.py, rlvr_run.py


class MetricsCallback(TrainerCallback):
    """Appends each log record (with ``step`` and ``format_error_rate``) to metrics.jsonl; plots on save/end."""

    def __init__(self, output_dir: Path) -> None:
        self.path = output_dir / "metrics.jsonl"
        self.png = output_dir / "training_curves.png"

    def write(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        record = {
            "step": state.global_step,
            **{k: v for k, v in logs.items() if isinstance(v, int | float | str)},
        }
        if "format_compliance" in record:
            record["format_error_rate"] = 1.0 - record["format_compliance"]
        self.write(record)

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            plot_metrics(self.path, self.png)

    def on_train_end(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            plot_metrics(self.path, self.png)


def greedy_eval(
    model, tokenizer, rows: list[dict[str, Any]], reward_func, max_new_tokens: int, batch_size: int
):
    """Mean reward of greedy completions on ``rows`` (NaN/None rewards are left out)."""
    if not rows:
        return float("nan")
    prompts = [r["prompt"] for r in rows]
    completions = greedy_outputs(model, tokenizer, prompts, max_new_tokens, batch_size, prefix="")
    columns = {k: [r[k] for r in rows] for k in rows[0] if k != "prompt"}
    rewards = reward_func(prompts, completions, **columns)
    scores = [float(x) for x in rewards if x is not None and math.isfinite(float(x))]
    return sum(scores) / len(scores) if scores else float("nan")


class HeldOutEvalCallback(TrainerCallback):
    """Before training, every ``every`` steps and at the end (``every`` 0: at the end only): mean greedy reward on
    held-out samples → metrics.jsonl."""

    def __init__(
        self, rows, reward_func, metrics: MetricsCallback, every: int, max_new_tokens: int, batch_size: int
    ):
        self.rows, self.reward_func, self.metrics = rows, reward_func, metrics
        self.every, self.max_new_tokens, self.batch_size = every, max_new_tokens, batch_size
        self.history: list[tuple[int, float]] = []

    def _run(self, state, model, tokenizer) -> None:
        """Every process decodes its share (a sharded model needs them all); the first one writes the record."""
        if not self.rows or any(s == state.global_step for s, _ in self.history):
            return
        value = greedy_eval(
            model, tokenizer, self.rows, self.reward_func, self.max_new_tokens, self.batch_size
        )
        self.history.append((state.global_step, value))
        if state.is_world_process_zero:
            self.metrics.write({"step": state.global_step, "eval/mean_reward": value})

    def on_train_begin(self, args, state, control, model=None, processing_class=None, **kwargs):
        if self.every:
            self._run(state, model, processing_class)

    def on_step_end(self, args, state, control, model=None, processing_class=None, **kwargs):
        if self.every and state.global_step % self.every == 0:
            self._run(state, model, processing_class)

    def on_train_end(self, args, state, control, model=None, processing_class=None, **kwargs):
        self._run(state, model, processing_class)


class TrainBeginCallback(TrainerCallback):
    """``value = compute()`` once, when training begins: after the model is prepared (sharded, on its devices) and a
    resumed checkpoint loaded, before the first step; every process calls it."""

    def __init__(self, compute) -> None:
        self.compute, self.value = compute, None

    def on_train_begin(self, args, state, control, **kwargs):
        if self.value is None:
            self.value = self.compute()


class RichProgressCallback(TrainerCallback):
    """A rich progress bar showing the step and the latest mean reward."""

    def __init__(self, console=None) -> None:
        self.console = console
        self.progress = None
        self.task = None

    def on_train_begin(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return

        self.progress = Progress(
            TextColumn("[bold]training"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            TextColumn("{task.fields[info]}"),
            console=self.console,
        )
        self.progress.start()
        self.task = self.progress.add_task(
            "train", total=state.max_steps, completed=state.global_step, info=""
        )

    def on_log(self, args, state, control, logs=None, **kwargs):
        if self.progress is not None and logs and "reward" in logs:
            info = f"reward {logs['reward']:+.3f}  kept {logs.get('dynamic_sampling/kept_ratio', 1.0):.2f}"
            self.progress.update(self.task, info=info)

    def on_step_end(self, args, state, control, **kwargs):
        if self.progress is not None:
            self.progress.update(self.task, completed=state.global_step)

    def on_train_end(self, args, state, control, **kwargs):
        if self.progress is not None:
            self.progress.stop()
            self.progress = None
