"""Where training starts: a :class:`Start` supplies the run's defaults (its preset), its model, the rows it trains
on, its prompt budget and its view (how the policy reads prompts and writes actions).

Two starts: :class:`CheckpointStart` (any real checkpoint directory or hub id: ``--model M`` or ``--init CKPT``,
the ``paper`` preset's defaults, the rows as they are, plain text) and the embedded tiny model
(:class:`swe_srl.train.tiny.start.TinyStart`). :func:`swe_srl.train.config.start_for` picks one from the raw config.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from swe_srl.core.view import PlainView
from swe_srl.errors import TrainingError
from swe_srl.train.presets import preset_config
from swe_srl.train.schema import TrainConfig

RLVR_TRL: dict[str, Any] = {
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 4,
    "max_completion_length": 4096,
}
"""``--stage rlvr`` from a real checkpoint: the ``paper`` TRL settings with these (multi-turn transcripts)."""


class Start:
    """What every start shares: the rows as they are, plain text, the run's ``max_prompt_tokens``."""

    name = "start"
    preset_name = "paper"

    def preset(self, stage: str = "srl", method: str = "srl", effect: str = "off") -> dict[str, Any]:
        """The config defaults of a run of ``stage``/``method`` from here (under YAML, flags and ``--set``)."""
        raise NotImplementedError

    def model_path(self, config: TrainConfig, train_rows: list[dict]) -> str:
        """The model training loads (a directory or hub id), made ready here."""
        raise NotImplementedError

    def warmup_split(self, config: TrainConfig, rows: list[dict]) -> tuple[list[dict], list[dict]]:
        """(the rows a warm-up of the start saw, the rows training uses): both every row here."""
        return rows, rows

    def training_rows(self, config: TrainConfig, train_rows: list[dict]) -> list[dict]:
        """The rows SRL and ``--method sft`` train on."""
        return list(train_rows)

    def counts(self, config: TrainConfig, train_rows: list[dict]) -> dict[str, int]:
        """The summary's sample counts."""
        return {"train_samples": len(self.warmup_split(config, train_rows)[1])}

    def view(self, tokenizer: Any) -> PlainView:
        """How the policy with ``tokenizer`` reads rows and writes actions."""
        return PlainView()

    def max_prompt_tokens(self, config: TrainConfig) -> int | None:
        """The policy's prompt budget (None: whole prompts)."""
        return config.max_prompt_tokens

    def describe(self, config: TrainConfig) -> str:
        """What training started from, for the model card."""
        return str(config.init or config.model)

    def model_summary(self, model_dir: Path) -> dict[str, Any]:
        """What the summary records about the starting model itself."""
        return {}


class CheckpointStart(Start):
    """A real model: ``--init CKPT`` or ``--model`` (a directory or a hub id), with the ``paper`` preset's values."""

    name = "checkpoint"
    preset_name = "paper"

    def preset(self, stage: str = "srl", method: str = "srl", effect: str = "off") -> dict[str, Any]:
        preset = preset_config(self.preset_name)
        if stage == "rlvr":
            preset["trl"] = {**preset.get("trl", {}), **copy.deepcopy(RLVR_TRL)}
        return preset

    def model_path(self, config: TrainConfig, train_rows: list[dict]) -> str:
        if config.init:
            if not Path(config.init).exists():
                raise TrainingError(f"--init checkpoint {config.init} does not exist")
            return config.init
        return config.model
