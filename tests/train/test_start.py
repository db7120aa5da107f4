"""Where training starts (swe_srl.train.start): the tiny model by default, a checkpoint's own defaults for --init,
config.yaml written by every run and reproducing it, the held-out report's oracle paths, bf16's dtype merged."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")

import yaml  # noqa: E402
from conftest import make_samples  # noqa: E402

from swe_srl.core.view import PlainView  # noqa: E402
from swe_srl.train.config import load_config, resolve, start_of, with_dtype  # noqa: E402
from swe_srl.train.start import CheckpointStart  # noqa: E402
from swe_srl.train.tiny.model import build_model, build_tokenizer, make_tiny_policy, sample_texts  # noqa: E402
from swe_srl.train.tiny.preset import TINY_TRL_DEFAULTS  # noqa: E402
from swe_srl.train.tiny.slots import SlotView  # noqa: E402
from swe_srl.train.tiny.start import TinyStart  # noqa: E402

pytestmark = pytest.mark.train

QWEN_TEMPLATE = (
    "{%- for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}"
)
"""A real chat template: not the tiny model's (its generation prompt does not open ``<think>``)."""


def real_checkpoint(directory: Path) -> Path:
    """A tiny-shaped Qwen2 checkpoint saved to disk that is no tiny model: its own chat template (and the slot
    tokens in its vocabulary, which a real start must not read as slots)."""
    from swe_srl.train.options import TinyOptions

    options = TinyOptions(vocab_size=300, hidden_size=32, layers=1, heads=2)
    tokenizer = build_tokenizer(sample_texts(make_samples(2), slots=True), options.vocab_size, slots=True)
    tokenizer.chat_template = QWEN_TEMPLATE
    tokenizer.save_pretrained(directory)
    build_model(tokenizer, options).save_pretrained(directory)
    return directory


def test_the_tiny_model_is_the_default_start_with_the_cpu_tiny_preset_written_out():
    default, named = load_config(None, []), load_config(None, [], model="tiny")
    assert default == named and default.model == "tiny" and default.preset == "cpu-tiny"
    assert isinstance(start_of(default), TinyStart)
    assert {k: default.trl[k] for k in TINY_TRL_DEFAULTS} == TINY_TRL_DEFAULTS
    assert (default.reward, default.swap_library_names, default.loss.replay_weight) == ("mixed", 1.0, 0.1)
    assert load_config(None, [], model="some/model").preset == "paper"
    assert isinstance(start_of(load_config(None, [], model="some/model")), CheckpointStart)


def test_init_of_a_real_checkpoint_takes_the_paper_defaults_without_swaps_anchor_or_slots(tmp_path: Path):
    from transformers import AutoTokenizer

    from swe_srl.train.presets import PAPER_TRL

    ckpt = real_checkpoint(tmp_path / "real")
    config = load_config(None, [], init=str(ckpt), output=str(tmp_path / "out"))
    start = start_of(config)
    assert isinstance(start, CheckpointStart) and config.preset == "paper"
    assert config.trl["learning_rate"] == PAPER_TRL["learning_rate"] != TINY_TRL_DEFAULTS["learning_rate"]
    assert config.trl["num_generations"] == PAPER_TRL["num_generations"]
    assert config.max_prompt_tokens != config.tiny.max_prompt_tokens == 768
    assert (config.swap_library_names, config.loss.replay_weight, config.loss.sft_thought) == (0.0, 0.0, True)
    assert config.reward != "mixed"
    rows = [r for r in make_samples(4) if r["split"] == "train"]
    assert start.training_rows(config, rows) == rows  # no warm-up split, no name swaps
    assert start.model_path(config, rows) == str(ckpt)
    view = start.view(AutoTokenizer.from_pretrained(ckpt))
    assert type(view) is PlainView and view.rows(rows) == rows  # no slots, though its vocabulary holds them
    assert start.max_prompt_tokens(config) == config.max_prompt_tokens


def test_init_of_a_tiny_checkpoint_takes_the_tiny_defaults(tmp_path: Path):
    from transformers import AutoTokenizer

    from swe_srl.train.options import TinyOptions

    options = TinyOptions(vocab_size=300, hidden_size=32, layers=1, heads=2)
    tiny = make_tiny_policy(sample_texts(make_samples(2), slots=True), tmp_path / "tiny", options)
    config = load_config(None, [], init=str(tiny))
    start = start_of(config)
    assert isinstance(start, TinyStart) and config.preset == "cpu-tiny"
    assert {k: config.trl[k] for k in TINY_TRL_DEFAULTS} == TINY_TRL_DEFAULTS
    assert (config.reward, config.swap_library_names, config.loss.replay_weight) == ("mixed", 1.0, 0.1)
    assert isinstance(start.view(AutoTokenizer.from_pretrained(tiny)), SlotView)
    rows = [r for r in make_samples(4) if r["split"] == "train"]
    assert start.warmup_split(config, rows) == (rows, rows)  # an --init had its warm-up already
    assert start.max_prompt_tokens(config) == 768


def test_the_weights_dtype_is_merged_into_the_runs_model_init_kwargs():
    """A bf16 run on CUDA loads its weights in the start's dtype (fp32 master weights for a full fine-tune,
    bfloat16 under LoRA) without dropping the run's own model_init_kwargs; the run's own dtype wins."""
    trl = {"bf16": True, "model_init_kwargs": {"attn_implementation": "eager"}}
    merged = with_dtype(trl, cuda=True, lora=True)["model_init_kwargs"]
    assert merged == {"dtype": "bfloat16", "attn_implementation": "eager"}
    assert with_dtype(trl, cuda=True)["model_init_kwargs"] == {
        "dtype": "float32",
        "attn_implementation": "eager",
    }
    own = {"bf16": True, "model_init_kwargs": {"dtype": "float16"}}
    assert with_dtype(own, cuda=True, lora=True)["model_init_kwargs"] == {"dtype": "float16"}  # the run's own
    assert with_dtype(trl, cuda=False) == trl and with_dtype({"bf16": False}, cuda=True) == {"bf16": False}
    data = {
        "model": "some/model",
        "lora": {"enabled": True},
        "trl": {"model_init_kwargs": {"attn_implementation": "sdpa"}},
    }
    merged_config, _ = resolve(data, cuda=True)  # the paper preset is bf16
    assert merged_config["trl"]["model_init_kwargs"] == {"dtype": "bfloat16", "attn_implementation": "sdpa"}


def test_heldout_report_names_the_oracle_paths_of_each_sample(tmp_path: Path):
    from swe_srl.train.data import split_rows
    from swe_srl.train.heldout import heldout_report

    train, test = split_rows(make_samples(3, oracle=True))
    tokenizer = build_tokenizer(sample_texts(train), 300)
    outputs = [r["expert_action"] for r in test]
    heldout_report(tmp_path, train, test, tokenizer, outputs, outputs)
    lines = [json.loads(x) for x in (tmp_path / "heldout.jsonl").read_text().splitlines()]
    assert len(lines) == len(test) == 5
    assert all(
        line["oracle_paths"] == row["oracle_files"] != [] for line, row in zip(lines, test, strict=True)
    )
    assert lines[0]["oracle_paths"][0] in lines[0]["prompt"]  # the file its prompt shows


def test_sft_without_max_steps_trains_its_epochs(samples_file: Path, tmp_path: Path):
    """--method sft --model M: with no trl.max_steps (the paper preset sets none) it trains num_train_epochs passes,
    not 0 steps."""
    from swe_srl.train.launch import run_method

    model = real_checkpoint(tmp_path / "real")
    sets = ["trl.per_device_train_batch_size=8", "trl.gradient_accumulation_steps=4", "trl.num_train_epochs=0.25",
            "eval.max_samples=0", "trl.max_completion_length=8", "max_prompt_tokens=64"]  # fmt: skip
    config = load_config(None, sets, model=str(model), method="sft", samples=str(samples_file),
                         output=str(tmp_path / "sft"))  # fmt: skip
    assert config.trl.get("max_steps", -1) == -1
    summary = run_method(config)
    train_rows = 35  # 7 train instances × 5 steps
    assert summary["steps"] == math.ceil(0.25 * train_rows / 4) == 3
    assert len((tmp_path / "sft" / "metrics.jsonl").read_text().splitlines()) == 3


def _train(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "swe_srl.cli", "train", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900)


def test_every_run_writes_its_config_and_the_config_reproduces_it(samples_file: Path, tmp_path: Path):
    from trl import GRPOConfig

    from swe_srl.train.trl_options import REFUSED

    small = ["tiny.warmup_steps=2", "tiny.hidden_size=32", "tiny.layers=1", "tiny.heads=2", "tiny.vocab_size=300",
             "eval.max_samples=0", "trl.max_completion_length=8", "trl.save_steps=100"]  # fmt: skip
    sets = [x for s in small for x in ("--set", s)]
    first, second = tmp_path / "first", tmp_path / "second"
    args = [
        "--samples",
        str(samples_file),
        "--reward",
        "srl",
    ]  # demo samples: no task set for the layered reward
    proc = _train(*args, "--max-steps", "1", *sets, "-o", str(first))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    written = yaml.safe_load((first / "config.yaml").read_text())
    assert written["output"] == str(first.resolve()) and written["samples"] == str(samples_file.resolve())
    assert (written["model"], written["preset"], written["reward"]) == ("tiny", "cpu-tiny", "srl")
    assert written["tiny"]["hidden_size"] == 32 and written["loss"]["replay_weight"] == 0.1  # every section
    fields = {f.name for f in GRPOConfig.__dataclass_fields__.values() if f.init}
    assert set(written["trl"]) == fields - set(REFUSED) - {"output_dir", "seed"}  # TRL's defaults too
    assert written["trl"]["max_steps"] == 1 and written["trl"]["learning_rate"] == 3e-4
    proc = _train("--config", str(first / "config.yaml"), "-o", str(second))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    again = yaml.safe_load((second / "config.yaml").read_text())
    assert again.pop("output") == str(second.resolve()) and written.pop("output") == str(first.resolve())
    assert again == written
    metrics = [json.loads(x) for x in (first / "metrics.jsonl").read_text().splitlines()]
    rerun = [json.loads(x) for x in (second / "metrics.jsonl").read_text().splitlines()]
    assert [m.get("loss") for m in metrics] == [m.get("loss") for m in rerun]  # the same run again


def test_a_run_that_allows_unlimited_sandboxes_says_so_in_its_config(tmp_path: Path, monkeypatch):
    from swe_srl.infra.sandbox.base import ALLOW_UNLIMITED_ENV
    from swe_srl.train.record import write_config

    config = load_config(None, [], output=str(tmp_path / "plain"))
    assert not write_config(config).read_text().startswith("#")
    monkeypatch.setenv(ALLOW_UNLIMITED_ENV, "1")
    config = load_config(None, [], output=str(tmp_path / "allowed"))
    text = write_config(config).read_text()
    assert text.startswith("# unlimited sandboxes allowed")
    assert load_config(str(tmp_path / "allowed" / "config.yaml"), []).output == str(tmp_path / "allowed")
