"""GRPO step benchmark: our SRLGRPOTrainer (static KV cache + compiled decoding) vs plain TRL GRPOTrainer.

Same policy (random-init, Qwen2.5-0.5B shape, vocab 32k), same prompts (2,048 tokens), same completions (256
tokens), same reward, 8 prompts × 8 generations per step. Prints step time, completion tokens/s and peak memory.

    python bench/train_gpu.py                 # CUDA machine, the real shapes
    python bench/train_gpu.py --tiny          # CPU smoke run of the same code path (tests use it)
"""

from __future__ import annotations

import argparse
import difflib
import gc
import random
import statistics
import tempfile
import time
from pathlib import Path

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
    "steps": 5,
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
    Qwen2ForCausalLM(config).save_pretrained(directory)
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
    """Wall time of each optimizer step (generation + scoring + backward)."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self._start = 0.0

    def on_step_begin(self, args, state, control, **kwargs):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        self._start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        self.times.append(time.perf_counter() - self._start)


def run(kind: str, model_dir: Path, shape: dict, out: Path) -> dict:
    from trl import GRPOConfig, GRPOTrainer

    from swe_srl.train.config import DynamicSampling
    from swe_srl.train.trainer import SRLGRPOTrainer

    cuda = torch.cuda.is_available()
    args = GRPOConfig(
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
        gradient_checkpointing=cuda,
        model_init_kwargs={"dtype": torch.bfloat16} if cuda else None,
    )
    tokenizer = PreTrainedTokenizerFast.from_pretrained(
        model_dir
    )  # AutoTokenizer would pick Qwen2's BPE class
    common = {
        "model": str(model_dir),
        "reward_funcs": similarity_reward,
        "args": args,
        "processing_class": tokenizer,
        "train_dataset": make_dataset(shape),
        "callbacks": [timer := StepTimer()],
    }
    if kind == "ours":
        # epsilon 0: keep every group with any spread, so both runs generate the same number of completions
        trainer = SRLGRPOTrainer(**common, dynamic_sampling=DynamicSampling(epsilon=0.0, max_rounds=1))
        if not cuda:  # exercise the static cache path on CPU too (compilation is a CUDA-only win)
            trainer.generation_config.cache_implementation = "static"
    else:
        trainer = GRPOTrainer(**common)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    trainer.train()
    lengths = trainer.state.log_history
    mean_len = statistics.mean(
        h["completions/mean_length"] for h in lengths if "completions/mean_length" in h
    )
    steady = timer.times[1:] or timer.times  # the first step includes compilation / warm-up
    step = statistics.median(steady)
    result = {
        "trainer": kind,
        "step_s": step,
        "first_step_s": timer.times[0],
        "completion_tok_s": mean_len * shape["prompts"] * shape["gens"] / step,
        "peak_gib": torch.cuda.max_memory_allocated() / 2**30 if cuda else float("nan"),
        "reward": statistics.mean(h["reward"] for h in lengths if "reward" in h),
    }
    del trainer
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="tiny shapes on CPU (smoke test)")
    parser.add_argument("--steps", type=int, default=None, help="optimizer steps per trainer")
    parser.add_argument("--only", choices=["ours", "plain"], default=None, help="run one trainer")
    ns = parser.parse_args()
    shape = dict(TINY if ns.tiny else REAL)
    shape["steps"] = ns.steps or shape["steps"]
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = make_policy(shape, Path(tmp) / "policy")
        kinds = [ns.only] if ns.only else ["plain", "ours"]
        results = [run(kind, model_dir, shape, Path(tmp)) for kind in kinds]
    print(f"shape: {shape}  device: {torch.cuda.get_device_name() if torch.cuda.is_available() else 'cpu'}")
    print(f"{'trainer':8} {'step s':>8} {'1st step s':>10} {'compl tok/s':>12} {'peak GiB':>9} {'reward':>7}")
    for r in results:
        print(
            f"{r['trainer']:8} {r['step_s']:8.2f} {r['first_step_s']:10.2f} {r['completion_tok_s']:12.0f} "
            f"{r['peak_gib']:9.1f} {r['reward']:7.3f}"
        )


if __name__ == "__main__":
    main()
