"""GRPO step benchmark: our SRLGRPOTrainer (static KV cache + compiled decoding) vs plain TRL GRPOTrainer.

Same policy (random-init, Qwen2.5-0.5B shape, vocab 32k), same prompts (2,048 tokens), same completions (256
tokens), same reward, 8 prompts × 8 generations per step, gradient checkpointing + bf16 on CUDA for both. Plain TRL
keeps its defaults. Prints, as each trainer finishes, step time (median after the first, warm-up step), generation
time per step, completion tokens/s, peak memory and compiled graphs; ``--json`` writes the same figures.

    python bench/train_gpu.py --json out.json     # CUDA machine, the real shapes (bench/gpu_run.sh)
    python bench/train_gpu.py --tiny              # CPU smoke run of the same code path
    python bench/train_gpu.py --tiny --compile-cpu  # ... with the decoding step compiled on CPU (tests use it)
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
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM, TrainerCallback

REAL = {
    "hidden": 896,
    "layers": 24,
    "heads": 14,
    "kv": 2,
    "ffn": 4864,
    "vocab": 32000,
    "prompt": 2048,
    "completion": 256,
    "prompts": 8,
    "gens": 8,
    "steps": 4,
}
TINY = {
    "hidden": 64,
    "layers": 2,
    "heads": 4,
    "kv": 2,
    "ffn": 128,
    "vocab": 1000,
    "prompt": 64,
    "completion": 16,
    "prompts": 2,
    "gens": 4,
    "steps": 2,
}


def make_policy(shape: dict, directory: Path) -> Path:
    """Word-level tokenizer with ``vocab`` tokens (one token = one word) + random-init Qwen2 of the given shape."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"<|endoftext|>": 0, "<|im_end|>": 1, **{f"w{i}": i + 2 for i in range(shape["vocab"] - 2)}}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<|endoftext|>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    config = Qwen2Config(
        vocab_size=shape["vocab"],
        hidden_size=shape["hidden"],
        intermediate_size=shape["ffn"],
        num_hidden_layers=shape["layers"],
        num_attention_heads=shape["heads"],
        num_key_value_heads=shape["kv"],
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        eos_token_id=1,
        pad_token_id=0,
    )
    torch.manual_seed(0)
    Qwen2ForCausalLM(config).to(
        torch.bfloat16 if torch.cuda.is_available() else torch.float32
    ).save_pretrained(directory)
    fast.save_pretrained(directory)
    return directory


def make_dataset(shape: dict, rows: int = 64):
    from datasets import Dataset

    rng = random.Random(0)
    words = [f"w{i}" for i in range(2, shape["vocab"])]
    return Dataset.from_list(
        [
            {
                "prompt": " ".join(rng.choices(words, k=shape["prompt"])),
                "expert_action": " ".join(rng.choices(words, k=8)),
            }
            for _ in range(rows)
        ]
    )


def similarity_reward(prompts, completions, expert_action, **_):
    """The same reward for both trainers: similarity of the completion's first words to the expert's."""
    return [
        difflib.SequenceMatcher(None, c.split()[:8], e.split()).ratio()
        for c, e in zip(completions, expert_action, strict=True)
    ]


class StepTimer(TrainerCallback):
    """Wall time of each optimizer step (generation + scoring + backward); stops training past ``deadline``."""

    def __init__(self, deadline: float) -> None:
        self.times: list[float] = []
        self.deadline = deadline
        self._start = 0.0

    def on_step_begin(self, args, state, control, **kwargs):
        _sync()
        self._start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        _sync()
        self.times.append(time.perf_counter() - self._start)
        print(f"  step {len(self.times)}: {self.times[-1]:.2f} s", flush=True)
        if time.perf_counter() > self.deadline:
            print("  time budget spent: stopping this trainer", flush=True)
            control.should_training_stop = True


def _sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def time_generation(trainer: Any) -> list[float]:
    """Wrap the trainer's generation call (the same one for both trainers) to time it; returns the list it fills."""
    times: list[float] = []
    inner = trainer._generate_single_turn

    def timed(*args: Any, **kwargs: Any) -> Any:
        _sync()
        start = time.perf_counter()
        out = inner(*args, **kwargs)
        _sync()
        times.append(time.perf_counter() - start)
        return out

    trainer._generate_single_turn = timed
    return times


def grpo_args(kind: str, shape: dict, out: Path) -> Any:
    from trl import GRPOConfig

    cuda = torch.cuda.is_available()
    return GRPOConfig(
        output_dir=str(out / kind),
        report_to="none",
        save_strategy="no",
        logging_steps=1,
        disable_tqdm=True,
        max_steps=shape["steps"],
        learning_rate=1e-6,
        beta=0.0,
        num_generations=shape["gens"],
        per_device_train_batch_size=shape["prompts"] * shape["gens"],
        max_completion_length=shape["completion"],
        bf16=cuda,
        use_cpu=not cuda,
        gradient_checkpointing=True,
        model_init_kwargs={"dtype": torch.bfloat16} if cuda else None,
    )


def build(kind: str, model_dir: Path, shape: dict, out: Path, timer: StepTimer, compile_cpu: bool) -> Any:
    from trl import GRPOTrainer

    from swe_srl.train.config import DynamicSampling
    from swe_srl.train.trainer import SRLGRPOTrainer, enable_fast_generation

    common = {
        "model": str(model_dir),
        "reward_funcs": similarity_reward,
        "args": grpo_args(kind, shape, out),
        # AutoTokenizer would pick Qwen2's BPE class
        "processing_class": PreTrainedTokenizerFast.from_pretrained(model_dir),
        "train_dataset": make_dataset(shape),
        "callbacks": [timer],
    }
    if kind == "plain":
        return GRPOTrainer(**common)
    # no dynamic sampling: one generation round and every group trained, the same work as plain TRL
    trainer = SRLGRPOTrainer(**common, dynamic_sampling=DynamicSampling(enabled=False))
    if not torch.cuda.is_available():  # CPU: static cache always, compiled decoding on request
        trainer.generation_config.cache_implementation = "static"
        if compile_cpu:
            enable_fast_generation(trainer.generation_config, all_devices=True)
    return trainer


def run(kind: str, model_dir: Path, shape: dict, out: Path, deadline: float, compile_cpu: bool) -> dict:
    from torch._dynamo.utils import counters

    timer = StepTimer(deadline)
    trainer = build(kind, model_dir, shape, out, timer, compile_cpu)
    gen_times = time_generation(trainer)
    graphs_before = counters["stats"]["unique_graphs"]
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    trainer.train()
    history = trainer.state.log_history
    mean_len = statistics.mean(
        h["completions/mean_length"] for h in history if "completions/mean_length" in h
    )
    steady = timer.times[1:] or timer.times  # the first step includes compilation / warm-up
    step = statistics.median(steady)
    gen_cfg = trainer.generation_config
    result = {
        "trainer": kind,
        "steps": len(timer.times),
        "step_s": step,
        "first_step_s": timer.times[0],
        "step_times_s": timer.times,
        "gen_s": statistics.median(gen_times[1:] or gen_times),
        "gen_times_s": gen_times,
        "completion_tok_s": mean_len * shape["prompts"] * shape["gens"] / step,
        "mean_completion_len": mean_len,
        "peak_gib": torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else math.nan,
        "reward": statistics.mean(h["reward"] for h in history if "reward" in h),
        "compiled_graphs": counters["stats"]["unique_graphs"] - graphs_before,
        "cache_implementation": gen_cfg.cache_implementation,
        "compile": not gen_cfg.disable_compile,
    }
    del trainer
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return result


HEADER = f"{'trainer':8} {'step s':>7} {'1st s':>7} {'gen s':>6} {'compl tok/s':>11} {'peak GiB':>8} {'reward':>7} {'graphs':>6}"


def row(r: dict) -> str:
    return (
        f"{r['trainer']:8} {r['step_s']:7.2f} {r['first_step_s']:7.2f} {r['gen_s']:6.2f} "
        f"{r['completion_tok_s']:11.0f} {r['peak_gib']:8.1f} {r['reward']:7.3f} {r['compiled_graphs']:6d}"
    )


def environment() -> dict:
    import transformers
    import trl

    cuda = torch.cuda.is_available()
    return {
        "device": torch.cuda.get_device_name() if cuda else "cpu",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "trl": trl.__version__,
        "python": sys.version.split()[0],
    }


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="tiny shapes on CPU (smoke test)")
    parser.add_argument(
        "--steps", type=int, default=None, help="optimizer steps per trainer (first = warm-up)"
    )
    parser.add_argument("--only", choices=["ours", "plain"], default=None, help="run one trainer")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here (after each trainer)")
    parser.add_argument(
        "--time-budget",
        type=float,
        default=420.0,
        help="seconds for both trainers; a trainer past it stops after its step",
    )
    parser.add_argument(
        "--compile-cpu", action="store_true", help="CPU: compile the decoding step as on CUDA"
    )
    return parser.parse_args()


def main() -> None:
    ns = parse_args()
    deadline = time.perf_counter() + ns.time_budget
    shape = dict(TINY if ns.tiny else REAL)
    shape["steps"] = ns.steps or shape["steps"]
    report: dict[str, Any] = {"shape": shape, **environment(), "results": []}
    print(f"shape: {shape}\nenv: {environment()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = make_policy(shape, Path(tmp) / "policy")
        for kind in [ns.only] if ns.only else ["plain", "ours"]:
            if time.perf_counter() > deadline:
                print(f"{kind}: skipped, time budget spent", flush=True)
                continue
            print(f"== {kind}", flush=True)
            report["results"].append(run(kind, model_dir, shape, Path(tmp), deadline, ns.compile_cpu))
            print(HEADER + "\n" + "\n".join(row(r) for r in report["results"]), flush=True)
            if ns.json:
                from swe_srl.paths import atomic_write_text

                atomic_write_text(ns.json, json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
