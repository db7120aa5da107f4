"""Benchmark: decomposition throughput (trajectories/s) without and with a real tokenizer budget, side by side.

Synthesizes ~200 trajectories in-process (deterministic) and trains a word-level tokenizer with ``tokenizers``
(no hub access needed). Usage: ``python bench/decompose.py [--trajectories 200] [--max-tokens 3000]``.
"""

from __future__ import annotations

import argparse
import random
import time

from rich.console import Console
from rich.table import Table

from swe_srl.core.prompts import SYSTEM_PROMPT
from swe_srl.trajectories.decompose import decompose
from swe_srl.trajectories.schema import Step, Trajectory

ACTIONS = (
    "grep -rn 'def {name}' src/",
    "find . -name '{name}.py'",
    "sed -n '{a},{b}p' src/{name}.py",
    "str_replace_editor view /testbed/src/{name}.py --view_range {a} {b}",
    "python -m pytest tests/test_{name}.py -q -x",
    "str_replace_editor str_replace /testbed/src/{name}.py --old_str 'return {name}(x)' --new_str 'return {name}(x, y)'",
)
WORDS = [
    "def",
    "return",
    "class",
    "self",
    "import",
    "value",
    "error",
    "assert",
    "test",
    "module",
    "path",
    "line",
    "file",
    "data",
]


def synthesize(n: int, seed: int = 0) -> list[Trajectory]:
    rng = random.Random(seed)
    trajs = []
    for i in range(n):
        steps = []
        for _ in range(rng.randint(8, 30)):
            name = rng.choice(WORDS)
            a = rng.randint(1, 400)
            action = rng.choice(ACTIONS).format(name=name, a=a, b=a + rng.randint(5, 60))
            observation = "\n".join(
                " ".join(rng.choices(WORDS, k=rng.randint(3, 12))) for _ in range(rng.randint(1, 120))
            )
            steps.append(Step(thought=f"check {name}", action=action, observation=observation))
        steps.append(Step(thought="done", action="submit"))
        problem = " ".join(rng.choices(WORDS, k=rng.randint(50, 400)))
        trajs.append(Trajectory(instance_id=f"bench__repo-{i}", problem=problem, steps=steps))
    return trajs


def word_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel()
    corpus = [SYSTEM_PROMPT, *ACTIONS, " ".join(WORDS) * 20]
    tokenizer.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=2000, special_tokens=["[UNK]"]))
    return tokenizer


def measure(trajs: list[Trajectory], **kwargs) -> tuple[float, int, int]:
    start = time.perf_counter()
    samples, stats = decompose(trajs, **kwargs)
    elapsed = time.perf_counter() - start
    return len(trajs) / elapsed, len(samples), stats.dropped_samples["over_budget"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=200)
    parser.add_argument("--max-tokens", type=int, default=1500)
    args = parser.parse_args()
    trajs = synthesize(args.trajectories)
    tokenizer = word_tokenizer()
    measure(trajs[:20])  # warm-up (imports, caches) so the first row is not penalized
    rows = [
        ("no budget", measure(trajs)),
        (f"budget {args.max_tokens} (chars/4)", measure(trajs, max_tokens=args.max_tokens)),
        (
            f"budget {args.max_tokens} (BPE)",
            measure(trajs, tokenizer=tokenizer, max_tokens=args.max_tokens),
        ),
    ]
    table = Table(
        title=f"decompose: {len(trajs)} synthetic trajectories, {sum(len(t.steps) for t in trajs)} steps"
    )
    for column in ("mode", "trajectories/s", "samples", "over budget", "vs no budget"):
        table.add_column(column, justify="left" if column == "mode" else "right")
    baseline = rows[0][1][0]
    for mode, (rate, samples, over) in rows:
        table.add_row(mode, f"{rate:,.1f}", str(samples), str(over), f"{rate / baseline:.2f}x")
    Console().print(table)


if __name__ == "__main__":
    main()
