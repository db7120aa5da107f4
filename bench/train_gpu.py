"""GPU bench of the ``paper-lora`` path: our SRLGRPOTrainer vs plain TRL GRPOTrainer on Qwen2.5-Coder-7B's shape.

The policy is a random-init Qwen2 of Qwen2.5-Coder-7B-Instruct's exact shape (hidden 3584, intermediate 18944, 28
layers, 28 heads, 4 KV heads, vocab 152064, untied embeddings), built on the GPU in bf16 (nothing downloaded). Both
trainers train LoRA adapters (the ``paper-lora`` preset's LoRA and TRL values) at ``paper-lora``'s micro-batch
(4 completions) and generation chunk (4 × steps_per_generation 4 = 16 completions = 2 prompts × 8 rollouts), with
8,192-token prompts and 512-token completions, HF ``generate`` (no vLLM), the same reward and no refill rounds
(dynamic sampling off). One optimizer step here is one generation chunk (gradient accumulation 4), not Table 8's
512 prompts. Prints per trainer: seconds per optimizer step (median after the first, warm-up step), completion and
trained tokens per second, peak memory, and the memory plan's figure for the same settings
(``swe_srl.train.plan``; measured / planned). Then HF batched generation (the ``hf:`` policy's
``agent.models.generate_ids``) tokens per second on the same shape.

    python bench/train_gpu.py --json out.json     # CUDA machine (bench/gpu_run.sh)
    python bench/train_gpu.py --tiny              # CPU: the same code path on a tiny shape
"""

from __future__ import annotations

import argparse
import difflib
import gc
import json
import math
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM, TrainerCallback

QWEN_7B = {"hidden": 3584, "ffn": 18944, "layers": 28, "heads": 28, "kv": 4, "vocab": 152064}
TINY_SHAPE = {"hidden": 64, "ffn": 256, "layers": 2, "heads": 4, "kv": 2, "vocab": 1000}
REAL = {"prompt": 8192, "completion": 512, "steps": 2, "gen_rows": 16, "gen_new": 128}
TINY = {"prompt": 64, "completion": 16, "steps": 2, "gen_rows": 4, "gen_new": 8}
BATCH = {"per_device_train_batch_size": 4, "steps_per_generation": 4, "gradient_accumulation_steps": 4}
"""paper-lora's micro-batch and generation chunk; one optimizer step = one chunk (16 completions, 2 prompts)."""


def tokenizer_for(vocab: int) -> PreTrainedTokenizerFast:
    """Word-level: one word ``w{i}`` is one token, so prompts have exactly the length asked for."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = {"<|endoftext|>": 0, "<|im_end|>": 1, **{f"w{i}": i + 2 for i in range(vocab - 2)}}
    tok = Tokenizer(models.WordLevel(vocab=words, unk_token="<|endoftext|>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")


def build_model(shape: dict, seq: int) -> Qwen2ForCausalLM:
    """A random-init Qwen2 of ``shape``, built on the device in bf16 (CUDA) or fp32 (CPU)."""
    config = Qwen2Config(
        vocab_size=shape["vocab"],
        hidden_size=shape["hidden"],
        intermediate_size=shape["ffn"],
        num_hidden_layers=shape["layers"],
        num_attention_heads=shape["heads"],
        num_key_value_heads=shape["kv"],
        max_position_embeddings=max(32768, seq),
        tie_word_embeddings=False,
        eos_token_id=1,
        pad_token_id=0,
        bos_token_id=None,
    )
    cuda = torch.cuda.is_available()
    torch.manual_seed(0)
    with torch.device("cuda" if cuda else "cpu"):
        model = Qwen2ForCausalLM._from_config(config, dtype=torch.bfloat16 if cuda else torch.float32)
    model.generation_config.eos_token_id, model.generation_config.pad_token_id = 1, 0
    return model


def make_dataset(vocab: int, prompt: int, rows: int = 64):
    from datasets import Dataset

    rng = random.Random(0)
    words = [f"w{i}" for i in range(2, vocab)]
    return Dataset.from_list(
        [
            {
                "prompt": " ".join(rng.choices(words, k=prompt)),
                "expert_action": " ".join(rng.choices(words, k=8)),
            }
            for _ in range(rows)
        ]  # fmt: skip
    )


def similarity_reward(prompts, completions, expert_action, **_):
    """The same reward for both trainers: similarity of the completion's first words to the expert's."""
    return [
        difflib.SequenceMatcher(None, c.split()[:8], e.split()).ratio()
        for c, e in zip(completions, expert_action, strict=True)
    ]


class StepTimer(TrainerCallback):
    """Wall time of each optimizer step (generation + scoring + forward/backward)."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self._start = 0.0

    def on_step_begin(self, args, state, control, **kwargs):
        _sync()
        self._start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        _sync()
        self.times.append(time.perf_counter() - self._start)
        print(f"  step {len(self.times)}: {self.times[-1]:.2f} s", flush=True)


def _sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def trl_values(sizes: dict, steps: int) -> dict[str, Any]:
    """``paper-lora``'s TRL values with this bench's sizes (no vLLM, no checkpoints)."""
    from swe_srl.train.presets import preset_config

    cuda = torch.cuda.is_available()
    trl = {**preset_config("paper-lora")["trl"], **BATCH}
    trl.update(use_vllm=False, max_completion_length=sizes["completion"], max_steps=steps, bf16=cuda)
    trl.update(report_to="none", save_strategy="no", logging_steps=1, disable_tqdm=True, use_cpu=not cuda)
    trl.pop("vllm_mode", None), trl.pop("vllm_gpu_memory_utilization", None)
    return trl


def build(kind: str, shape: dict, sizes: dict, out: Path, timer: StepTimer) -> Any:
    from peft import LoraConfig
    from trl import GRPOConfig, GRPOTrainer

    from swe_srl.train.options import DynamicSampling, LoraOptions
    from swe_srl.train.trainer import SRLGRPOTrainer

    lora = LoraOptions()
    common = {
        "model": build_model(shape, sizes["prompt"] + sizes["completion"]),
        "reward_funcs": similarity_reward,
        "args": GRPOConfig(output_dir=str(out / kind), **trl_values(sizes, sizes["steps"])),
        "processing_class": tokenizer_for(shape["vocab"]),
        "train_dataset": make_dataset(shape["vocab"], sizes["prompt"]),
        "callbacks": [timer],
        "peft_config": LoraConfig(
            r=lora.r,
            lora_alpha=lora.alpha,
            lora_dropout=lora.dropout,
            target_modules=lora.target_modules,
            task_type="CAUSAL_LM",
        ),  # fmt: skip
    }
    if kind == "plain":
        return GRPOTrainer(**common)
    # no refill rounds: one generation round and every group trained, the same work as plain TRL
    return SRLGRPOTrainer(**common, dynamic_sampling=DynamicSampling(enabled=False), fast_generation=False)


def planned_gib(shape: dict, sizes: dict) -> float:
    """The memory plan's peak for these settings on this card (swe_srl.train.plan), in GiB."""
    from swe_srl.train.plan import ModelShape, make_plan
    from swe_srl.train.schema import TrainConfig

    model = ModelShape(shape["hidden"], shape["ffn"], shape["layers"], shape["heads"], shape["kv"], shape["vocab"],
                       tied=False)  # fmt: skip
    trl = {**trl_values(sizes, sizes["steps"]), "gradient_checkpointing": True}
    config = TrainConfig.model_validate(
        {"model": "bench", "max_prompt_tokens": sizes["prompt"], "lora": {"enabled": True}, "trl": trl}
    )
    card = torch.cuda.get_device_properties(0).total_memory / 2**30 if torch.cuda.is_available() else 80.0
    return make_plan(model, config, 1, card).peak_gib


def run(kind: str, shape: dict, sizes: dict, out: Path) -> dict:
    timer = StepTimer()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    trainer = build(kind, shape, sizes, out, timer)
    trainer.train()
    history = trainer.state.log_history
    mean_len = statistics.mean(
        h["completions/mean_length"] for h in history if "completions/mean_length" in h
    )
    step = statistics.median(timer.times[1:] or timer.times)  # the first step warms up
    completions = BATCH["per_device_train_batch_size"] * BATCH["gradient_accumulation_steps"]
    cuda = torch.cuda.is_available()
    result = {
        "trainer": kind,
        "steps": len(timer.times),
        "step_s": step,
        "step_times_s": timer.times,
        "completion_tok_s": mean_len * completions / step,
        "trained_tok_s": (sizes["prompt"] + mean_len) * completions / step,
        "peak_gib": torch.cuda.max_memory_allocated() / 2**30 if cuda else math.nan,
        "planned_gib": planned_gib(shape, sizes),
        "reward": statistics.mean(h["reward"] for h in history if "reward" in h),
    }
    result["measured_over_planned"] = result["peak_gib"] / result["planned_gib"]
    del trainer
    gc.collect()
    return result


def hf_generation(shape: dict, sizes: dict) -> dict:
    """Tokens per second of one batched ``generate_ids`` call (what ``hf:`` evaluation runs per turn)."""
    from swe_srl.agent.models import generate_ids

    model, tokenizer = (
        build_model(shape, sizes["prompt"] + sizes["gen_new"]).eval(),
        tokenizer_for(shape["vocab"]),
    )
    rng = random.Random(1)
    batch = [
        [rng.randrange(2, shape["vocab"]) for _ in range(sizes["prompt"])] for _ in range(sizes["gen_rows"])
    ]
    model.generation_config.eos_token_id = None  # every row generates gen_new tokens
    generate_ids(model, tokenizer, batch[:1], 2)  # warm-up
    _sync()
    start = time.perf_counter()
    turns = generate_ids(model, tokenizer, batch, sizes["gen_new"])
    _sync()
    seconds = time.perf_counter() - start
    new = sum(map(len, turns))
    del model
    gc.collect()
    return {
        "rows": len(batch),
        "prompt": sizes["prompt"],
        "new_tokens": new,
        "s": seconds,
        "tok_s": new / seconds,
    }


HEADER = f"{'trainer':8} {'s/step':>7} {'compl tok/s':>11} {'trained tok/s':>13} {'peak GiB':>8} {'plan GiB':>8} {'meas/plan':>9}"


def row(r: dict) -> str:
    return (
        f"{r['trainer']:8} {r['step_s']:7.2f} {r['completion_tok_s']:11.0f} {r['trained_tok_s']:13.0f} "
        f"{r['peak_gib']:8.1f} {r['planned_gib']:8.1f} {r['measured_over_planned']:9.2f}"
    )


def environment() -> dict:
    import peft
    import transformers
    import trl

    cuda = torch.cuda.is_available()
    return {"device": torch.cuda.get_device_name() if cuda else "cpu", "torch": torch.__version__,
            "transformers": transformers.__version__, "trl": trl.__version__, "peft": peft.__version__,
            "python": sys.version.split()[0]}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tiny", action="store_true", help="a tiny shape (CPU smoke run of the same code path)"
    )
    parser.add_argument(
        "--steps", type=int, default=None, help="optimizer steps per trainer (the first warms up)"
    )
    parser.add_argument("--json", type=Path, default=None, help="write the figures here (after each part)")
    ns = parser.parse_args()
    shape, sizes = (TINY_SHAPE, dict(TINY)) if ns.tiny else (QWEN_7B, dict(REAL))
    sizes["steps"] = ns.steps or sizes["steps"]
    report: dict[str, Any] = {"shape": shape, "sizes": sizes, "batch": BATCH, **environment(), "results": []}
    print(f"shape: {shape}\nsizes: {sizes}\nenv: {environment()}", flush=True)

    def write() -> None:
        if ns.json:
            from swe_srl.paths import atomic_write_text

            atomic_write_text(ns.json, json.dumps(report, indent=2) + "\n")

    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("plain", "ours"):
            print(f"== {kind}", flush=True)
            report["results"].append(run(kind, shape, sizes, Path(tmp)))
            print(HEADER + "\n" + "\n".join(row(r) for r in report["results"]), flush=True)
            write()
    plain, ours = report["results"]
    report["ours_over_plain"] = ours["step_s"] / plain["step_s"]
    print(f"ours / plain s/step: {report['ours_over_plain']:.3f}", flush=True)
    print("== hf: batched generation", flush=True)
    report["hf_generation"] = hf_generation(shape, sizes)
    gen = report["hf_generation"]
    print(f"hf generate: {gen['rows']} rows × {gen['prompt']} prompt tokens, {gen['new_tokens']} new tokens in "
          f"{gen['s']:.1f} s = {gen['tok_s']:.0f} tok/s", flush=True)  # fmt: skip
    write()


if __name__ == "__main__":
    main()
