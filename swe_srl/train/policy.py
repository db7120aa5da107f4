"""The policy a training stage starts from and the TRL arguments it trains with (shared by SRL and RLVR)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from swe_srl.benchmark.instances import id_fraction
from swe_srl.core.actions import THINK_OPEN
from swe_srl.errors import ConfigError, TrainingError
from swe_srl.train.augment import swapped_libraries
from swe_srl.train.config import TrainConfig
from swe_srl.train.cpu import tune_cpu
from swe_srl.train.presets import REAL_TRL_DEFAULTS, TINY_TRL_DEFAULTS
from swe_srl.train.tiny import make_tiny_policy, sample_texts


def think_prefix(tokenizer) -> str:
    """``<think>`` when the chat template's generation prompt already opens the think block, else ''."""
    messages = [{"role": "user", "content": "x"}]
    try:
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    except (ValueError, TypeError, AttributeError):
        return ""
    return THINK_OPEN if str(text).rstrip().endswith(THINK_OPEN) else ""


def grpo_args(config: TrainConfig, tiny: bool, defaults: dict[str, Any] | None = None):
    """GRPOConfig = method defaults (tiny or real, or ``defaults``) + the run's ``trl`` options + the output path.

    The run's ``trl`` options always win: the CPU adjustments (no bf16, no gradient checkpointing) and the quiet
    logging (``report_to="none"``, no tqdm bar) only replace defaults. GRPOConfig's own checks (e.g. batch size vs
    ``num_generations``) become a :class:`ConfigError`.
    """
    import torch
    from trl import GRPOConfig

    cuda = torch.cuda.is_available()
    base = dict(defaults if defaults is not None else (TINY_TRL_DEFAULTS if tiny else REAL_TRL_DEFAULTS))
    base.update(report_to="none", disable_tqdm=True, seed=config.seed)
    if not cuda:
        base.update(bf16=False, use_cpu=True, gradient_checkpointing=False)
    options = {**base, **config.trl}
    if cuda and options.get("bf16"):
        options.setdefault("model_init_kwargs", {"dtype": "bfloat16"})
    try:
        return GRPOConfig(output_dir=str(config.output_dir), **options)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"trl options rejected by trl.GRPOConfig: {exc}") from exc


def peft_config(config: TrainConfig):
    """The LoRA config for ``--lora`` (None without it)."""
    if not config.lora.enabled:
        return None
    from peft import LoraConfig

    lora = config.lora
    return LoraConfig(
        r=lora.r,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=lora.target_modules,
        task_type="CAUSAL_LM",
    )


def warmup_split(config: TrainConfig, rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """(the format warm-up's rows, the rows SRL and SFT train on). The tiny model's warm-up takes the steps of a
    ``tiny.warmup_share`` of the train instances (a salted hash of the instance id: seed-independent, every step of
    an instance on one side) and training the rest, so the start has not seen what training teaches. At share 1,
    with ``--model`` or ``--init`` (no warm-up here), or where the share leaves one side empty (a single train
    instance), both get every row."""
    share = config.tiny.warmup_share
    if config.model is not None or config.init or share >= 1.0:
        return rows, rows
    sides: tuple[list[dict], list[dict]] = ([], [])
    for row in rows:
        key = row.get("instance_id") or row.get("trajectory_hash") or ""
        sides[id_fraction(f"warmup:{key}") >= share].append(row)
    warm, rest = sides
    return (warm, rest) if warm and rest else (rows, rows)


def training_rows(config: TrainConfig, train_rows: list[dict]) -> list[dict]:
    """The rows SRL and ``--method sft`` train on: the warm-up's other instances (:func:`warmup_split`), with the
    library names swapped in the run's share (``swap_library_names``, :func:`swapped_libraries`)."""
    rest = warmup_split(config, train_rows)[1]
    return swapped_libraries(rest, config.swap_library_names, seed=config.seed, pool=config.swap_pool)


def train_counts(config: TrainConfig, train_rows: list[dict]) -> dict[str, int]:
    """The summary's sample counts: the rows training used, and the tiny model's warm-up rows when it makes one."""
    warm, rest = warmup_split(config, train_rows)
    counts = {"train_samples": len(rest)}
    if config.model is None and not config.init:
        counts["warmup_samples"] = len(warm)
    return counts


def prepare_policy(config: TrainConfig, train_rows: list[dict]) -> tuple[str, bool]:
    """(model path or id, is_tiny): --init, else --model, else the tiny model saved under the output dir.

    A tiny policy (made here or an ``--init`` of one) gets its CPU settings first (:func:`tune_cpu`), so that its
    warm-up, training and evaluation all run with them.
    """
    if config.model is None:
        tune_cpu(config.tiny.threads)
    if config.init:
        if not Path(config.init).exists():
            raise TrainingError(f"--init checkpoint {config.init} does not exist")
        return config.init, config.model is None
    if config.model:
        return config.model, False
    texts = sample_texts(train_rows, config.tiny.slots)
    warm = warmup_split(config, train_rows)[0]
    path = make_tiny_policy(texts, config.output_dir / "tiny-model", config.tiny, warmup_rows=warm)
    return str(path), True
