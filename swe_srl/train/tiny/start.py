"""The tiny start (``--model tiny``, the default, or ``--init`` of a checkpoint trained from it): its preset
(``cpu-tiny``), its model built and warmed up in-process, the warm-up split and the name swaps of the rows SRL trains
on, its prompt budget (``tiny.max_prompt_tokens``), its CPU runtime and its slotted view."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from swe_srl.benchmark.instances import id_fraction
from swe_srl.core.view import PlainView
from swe_srl.train.schema import TrainConfig
from swe_srl.train.start import Start
from swe_srl.train.tiny.augment import swapped_libraries
from swe_srl.train.tiny.cpu import tune_cpu
from swe_srl.train.tiny.model import make_tiny_policy, sample_texts
from swe_srl.train.tiny.preset import tiny_preset
from swe_srl.train.tiny.slots import view_of


def warmup_split(config: TrainConfig, rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """(the format warm-up's rows, the rows SRL and SFT train on). The warm-up takes the steps of a
    ``tiny.warmup_share`` of the train instances (a salted hash of the instance id: seed-independent, every step of
    an instance on one side) and training the rest, so the start has not seen what training teaches. At share 1,
    with ``--init`` (no warm-up here), or where the share leaves one side empty (a single train instance), both get
    every row."""
    share = config.tiny.warmup_share
    if config.init or share >= 1.0:
        return rows, rows
    sides: tuple[list[dict], list[dict]] = ([], [])
    for row in rows:
        key = row.get("instance_id") or row.get("trajectory_hash") or ""
        sides[id_fraction(f"warmup:{key}") >= share].append(row)
    warm, rest = sides
    return (warm, rest) if warm and rest else (rows, rows)


class TinyStart(Start):
    """The embedded tiny model (:mod:`swe_srl.train.tiny`)."""

    name = "tiny"
    preset_name = "cpu-tiny"

    def preset(self, stage: str = "srl", method: str = "srl", effect: str = "off") -> dict[str, Any]:
        return tiny_preset(stage, method, effect)

    def model_path(self, config: TrainConfig, train_rows: list[dict]) -> str:
        """``--init``, else the tiny model built (and warmed up) under the output dir; the CPU settings first
        (:func:`tune_cpu`), so that the warm-up, training and evaluation all run with them."""
        tune_cpu(config.tiny.threads)
        if config.init:
            return config.init
        texts = sample_texts(train_rows, config.tiny.slots)
        warm = self.warmup_split(config, train_rows)[0]
        return str(make_tiny_policy(texts, config.output_dir / "tiny-model", config.tiny, warmup_rows=warm))

    def warmup_split(self, config: TrainConfig, rows: list[dict]) -> tuple[list[dict], list[dict]]:
        return warmup_split(config, rows)

    def training_rows(self, config: TrainConfig, train_rows: list[dict]) -> list[dict]:
        """The warm-up's other instances, with the library names swapped in the run's share
        (``swap_library_names``, :func:`swapped_libraries`)."""
        rest = self.warmup_split(config, train_rows)[1]
        return swapped_libraries(rest, config.swap_library_names, seed=config.seed, pool=config.swap_pool)

    def counts(self, config: TrainConfig, train_rows: list[dict]) -> dict[str, int]:
        warm, rest = self.warmup_split(config, train_rows)
        return {"train_samples": len(rest), **({} if config.init else {"warmup_samples": len(warm)})}

    def view(self, tokenizer: Any) -> PlainView:
        return view_of(tokenizer)

    def max_prompt_tokens(self, config: TrainConfig) -> int | None:
        return config.tiny.max_prompt_tokens

    def describe(self, config: TrainConfig) -> str:
        tiny = config.tiny
        return config.init or (
            f"the embedded tiny Qwen2-shaped model (hidden {tiny.hidden_size}, {tiny.layers} layers, "
            f"vocab {tiny.vocab_size}, format warm-up {tiny.warmup_steps} steps"
            f"{', slotted names' if tiny.slots else ''})"
        )

    def model_summary(self, model_dir: Path) -> dict[str, Any]:
        """The format warm-up (steps, first and last loss), when the model had one."""
        path = model_dir / "warmup.json"
        if not path.is_file():
            return {}
        record = json.loads(path.read_text(encoding="utf-8"))
        return {"format_warmup": {k: record[k] for k in ("steps", "loss_first", "loss_last")}}
