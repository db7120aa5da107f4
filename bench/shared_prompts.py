"""Benchmark: shared prompts (``shared_prompts``, on by default) against TRL's full forward, in the same run.

Part 1, the forwards: a random Qwen2 of ``--hidden``/``--layers`` (default: the tiny model's shape), ``--prompts``
prompts × ``--generations`` rows, ``--prompt-tokens`` left-padded prompt tokens + ``--completion-tokens``; times the
reference forward (no gradient), the training forward + backward, and sampled generation, each full and shared, and
prints the largest log-probability difference and whether the sampled tokens are the same.
Part 2, with ``--init CKPT`` (a tiny checkpoint, e.g. a default run's ``tiny-model``): ``--steps`` GRPO steps of
``swe-srl train --oracle-files --init CKPT`` with ``shared_prompts`` true and false, one after the other, and their
step times, tokens and rewards from ``metrics.jsonl``.
Usage: ``python bench/shared_prompts.py [--init OUT/tiny-model --steps 4]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM
from trl.trainer.utils import add_fused_lm_head

from swe_srl.train.shared_prompt import prompt_groups, share_generation_prefill, shared_prompt_logps


def _batch(args) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    n, p, c = args.prompts * args.generations, args.prompt_tokens, args.completion_tokens
    prompts = torch.randint(3, args.vocab, (args.prompts, p), generator=gen)
    mask = torch.ones_like(prompts)
    for row in range(args.prompts):  # prompts of different lengths, left-padded
        pad = row * p // (2 * args.prompts)
        prompts[row, :pad], mask[row, :pad] = 0, 0
    ids = torch.cat([prompts.repeat_interleave(args.generations, 0), torch.randint(3, args.vocab, (n, c))], 1)
    return ids, torch.cat(
        [mask.repeat_interleave(args.generations, 0), torch.ones(n, c, dtype=torch.long)], 1
    )


def _timed(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def forwards(args) -> None:
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=2 * args.hidden,
        num_hidden_layers=args.layers, num_attention_heads=4, num_key_value_heads=4,
        max_position_embeddings=args.prompt_tokens + 2 * args.completion_tokens, pad_token_id=0, eos_token_id=2,
    )  # fmt: skip
    model = Qwen2ForCausalLM(config)
    add_fused_lm_head(model, outputs=("log_probs", "entropy"))
    ids, mask = _batch(args)
    c = args.completion_tokens
    groups = prompt_groups(ids[:, :-c], mask[:, :-c])

    def full():
        labels = ids.masked_fill(mask == 0, -100)
        labels[:, :-c] = -100
        return model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True).log_probs[:, -c:]

    def shared():
        return shared_prompt_logps(model, ids, mask, c, groups)[0]

    def backward(forward):
        def run():
            model.zero_grad()
            forward().sum().backward()

        return run

    rows = []
    with torch.no_grad():
        t_full, a = _timed(full, args.repeats)
        t_shared, b = _timed(shared, args.repeats)
    rows.append(("reference forward (no grad)", t_full, t_shared))
    rows.append(("training forward + backward", _timed(backward(full), args.repeats)[0],
                 _timed(backward(shared), args.repeats)[0]))  # fmt: skip
    gen_config = GenerationConfig(
        max_new_tokens=c, do_sample=True, top_k=0, top_p=1.0, pad_token_id=0, eos_token_id=2
    )
    prompt, prompt_mask = ids[:, :-c], mask[:, :-c]
    sampled = {}
    for name in ("full", "shared"):
        if name == "shared":
            share_generation_prefill(model)

        def generate():
            torch.manual_seed(1)
            with torch.no_grad():
                return model.generate(
                    input_ids=prompt, attention_mask=prompt_mask, generation_config=gen_config
                )

        sampled[name] = _timed(generate, args.repeats)
    rows.append(("generation (sampled)", sampled["full"][0], sampled["shared"][0]))
    print(f"shape: hidden {args.hidden}, layers {args.layers}, vocab {args.vocab}; {args.prompts} prompts × "
          f"{args.generations} rows; {args.prompt_tokens} prompt + {c} completion tokens; threads "
          f"{torch.get_num_threads()}; median of {args.repeats}")  # fmt: skip
    print("| phase | TRL's full forward, s | shared prompts, s | speed-up |\n| --- | --- | --- | --- |")
    for name, before, after in rows:
        print(f"| {name} | {before:.3f} | {after:.3f} | {before / after:.2f}× |")
    print(f"largest |log-prob difference|: {(a - b).abs().max().item():.2e}; sampled tokens equal: "
          f"{torch.equal(sampled['full'][1], sampled['shared'][1])}")  # fmt: skip


def steps(args) -> None:
    print(f"\nGRPO steps from {args.init} (swe-srl train --oracle-files --max-steps {args.steps}):")
    print("| shared_prompts | step times, s | median | tokens after the last step | mean reward per step |")
    print("| --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for flag in ("true", "false"):
            out = Path(tmp) / flag
            cmd = [sys.executable, "-m", "swe_srl.cli", "train", "--oracle-files", "--init", args.init,
                   "--max-steps", str(args.steps), "--set", "eval.every=0", "--set", "eval.max_samples=4",
                   "--set", f"shared_prompts={flag}", "-o", str(out)]  # fmt: skip
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
            rows = [r for r in rows if "step_time" in r and "num_tokens" in r]
            times = ", ".join(f"{r['step_time']:.1f}" for r in rows)
            rewards = ", ".join(f"{r['reward']:.3f}" for r in rows)
            median = statistics.median(r["step_time"] for r in rows)
            print(f"| {flag} | {times} | {median:.1f} | {rows[-1]['num_tokens']:.0f} | {rewards} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=2048)
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--generations", type=int, default=8)
    parser.add_argument("--prompt-tokens", type=int, default=768)
    parser.add_argument("--completion-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--init", help="a tiny checkpoint: also time GRPO steps of swe-srl train from it")
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    forwards(args)
    if args.init:
        steps(args)


if __name__ == "__main__":
    main()
