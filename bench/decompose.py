"""Benchmark: decomposition end to end (read trajectories, decompose, write the samples file) in samples/s, next to a
plain ``json.load`` of the same inputs, then with a token budget (chars/4 and a real BPE tokenizer).

Synthesizes ~200 trajectories in-process (deterministic), writes them as native JSONL, and trains a word-level
tokenizer with ``tokenizers`` (no hub access needed); ``--input`` measures real trajectory files instead.
Usage: ``python bench/decompose.py [--trajectories 200] [--max-tokens 1500] [--input FILE ...]``.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from swe_srl.core.prompts import SYSTEM_PROMPT
from swe_srl.paths import atomic_write_text
from swe_srl.train.data import read_samples
from swe_srl.trajectories import import_trajectories
from swe_srl.trajectories.decompose import decompose
from swe_srl.trajectories.schema import Step, Trajectory, write_jsonl

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


def json_baseline(inputs: list[Path]) -> float:
    """Seconds to ``json.load`` the inputs (each line of a JSONL file, or a whole JSON file): reading alone."""
    files = [f for p in inputs for f in (sorted(p.rglob("*.json*")) if p.is_dir() else [p])]
    start = time.perf_counter()
    for path in files:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":
            [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            json.loads(text)
    return time.perf_counter() - start


def end_to_end(inputs: list[Path], out: Path) -> tuple[float, int]:
    """Seconds to import, decompose and write the samples file (what ``swe-srl decompose`` does), and samples."""
    start = time.perf_counter()
    trajs = [t for path in inputs for t in import_trajectories(str(path))]
    samples, _ = decompose(trajs)
    atomic_write_text(out, samples.text())
    return time.perf_counter() - start, len(samples)


def measure(trajs: list[Trajectory], **kwargs) -> tuple[float, int, int]:
    start = time.perf_counter()
    samples, stats = decompose(trajs, **kwargs)
    elapsed = time.perf_counter() - start
    return len(trajs) / elapsed, len(samples), stats.dropped_samples["over_budget"]


def speed_table(inputs: list[Path], work: Path) -> None:
    out = work / "samples.jsonl"
    end_to_end(inputs, out)  # warm-up (imports, caches)
    baseline = min(json_baseline(inputs) for _ in range(3))
    seconds, samples = min(end_to_end(inputs, out) for _ in range(3))
    start = time.perf_counter()
    rows = read_samples(out)
    load = time.perf_counter() - start
    size = sum(f.stat().st_size for p in inputs for f in (p.rglob("*.json*") if p.is_dir() else [p]))
    table = Table(title=f"end to end: {size / 1e6:.1f} MB of trajectories → {samples} samples")
    for column in ("step", "seconds", "samples/s", "time vs json.load"):
        table.add_column(column, justify="left" if column == "step" else "right")
    table.add_row("json.load of the inputs", f"{baseline:.3f}", f"{samples / baseline:,.0f}", "1.00x")
    table.add_row(
        "import + decompose + write",
        f"{seconds:.3f}",
        f"{samples / seconds:,.0f}",
        f"{seconds / baseline:.2f}x",
    )
    table.add_row(
        "read_samples (prompts built)", f"{load:.3f}", f"{len(rows) / load:,.0f}", f"{load / baseline:.2f}x"
    )
    Console().print(table)
    print(f"samples file: {out.stat().st_size / samples / 1000:.2f} KB/sample")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=200)
    parser.add_argument("--max-tokens", type=int, default=1500)
    parser.add_argument(
        "--input", type=Path, nargs="*", help="Real trajectory files or directories (any importer format)."
    )
    args = parser.parse_args()
    trajs = synthesize(args.trajectories)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        inputs = args.input
        if not inputs:
            inputs = [work / "trajectories.jsonl"]
            write_jsonl(inputs[0], trajs)
        speed_table(inputs, work)
        if args.input:
            trajs = [t for path in inputs for t in import_trajectories(str(path))]
    budget_table(trajs, args.max_tokens)


def budget_table(trajs: list[Trajectory], max_tokens: int) -> None:
    tokenizer = word_tokenizer()
    measure(trajs[:20])  # warm-up (imports, caches) so the first row is not penalized
    rows = [
        ("no budget", measure(trajs)),
        (f"budget {max_tokens} (chars/4)", measure(trajs, max_tokens=max_tokens)),
        (f"budget {max_tokens} (BPE)", measure(trajs, tokenizer=tokenizer, max_tokens=max_tokens)),
    ]
    table = Table(title=f"decompose: {len(trajs)} trajectories, {sum(len(t.steps) for t in trajs)} steps")
    for column in ("mode", "trajectories/s", "samples", "over budget", "vs no budget"):
        table.add_column(column, justify="left" if column == "mode" else "right")
    baseline = rows[0][1][0]
    for mode, (rate, samples, over) in rows:
        table.add_row(mode, f"{rate:,.1f}", str(samples), str(over), f"{rate / baseline:.2f}x")
    Console().print(table)


if __name__ == "__main__":
    main()
