"""Benchmark: SWE-smith at the SRL paper's scale: 5,000 trajectories imported (``--resolved-only``) and decomposed
with the paper's window (``--history 2 --holdout-trajectories 30``), timed next to a ``json.load`` of the same
inputs in the same run, with the samples file's size per sample.

The inputs are built here in the shapes of the shared SWE-smith samples (``--source``, default
``../shared/data/trajectories/samples/swe-smith/sample_raw.json``, else the test fixture): SWE-agent records with
``messages`` (``<function=…>`` calls), ``instance_id``, ``traj_id``, ``resolved``, ``model``, ``patch``. Record i is
source record i mod 5 with its own ids, its bash commands varied, some step pairs dropped or repeated and its
observations cut or lengthened (deterministic per ``--seed``); one in 20 more records is unresolved, for
``--resolved-only`` to leave out. They are written as one JSONL file, a record a line (as a parquet export is read).
Each stage is what the command does, called as functions: ``trajectories import`` (read, parse, select, write the
native JSONL), ``decompose`` (read the native JSONL, decompose, write the samples file), ``read_samples`` (the
prompts training builds).

    python bench/swesmith_scale.py [--trajectories 5000] [--history 2] [--holdout 30] [--source FILE]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from swe_srl.paths import atomic_write_text
from swe_srl.train.data import read_samples
from swe_srl.trajectories.decompose import decompose
from swe_srl.trajectories.importers import import_with_stats
from swe_srl.trajectories.schema import write_jsonl
from swe_srl.trajectories.selection import select

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "trajectories" / "samples" / "swe-smith" / "sample_raw.json"
FIXTURE = ROOT / "tests" / "fixtures" / "trajectories" / "swe_smith.json"
BASH = re.compile(r"(<function=bash>\s*<parameter=command>)([^\n<]*?)(</parameter>)")


def source_records(path: Path) -> list[dict]:
    loaded = json.loads(path.read_text(encoding="utf-8"))
    records = loaded if isinstance(loaded, list) else [loaded]
    for record in records:
        if isinstance(record["messages"], str):
            record["messages"] = json.loads(record["messages"])
    return records


def _units(messages: list[dict]) -> list[list[dict]]:
    """The messages after the system prompt and the problem, as steps: an assistant turn and what answered it."""
    units: list[list[dict]] = []
    for message in messages[2:]:
        if message.get("role") == "assistant" or not units:
            units.append([])
        units[-1].append(message)
    return units


def _vary_text(message: dict, rng: random.Random) -> dict:
    content = str(message.get("content") or "")
    if message.get("role") == "assistant":
        content = BASH.sub(lambda m: f"{m[1]}{m[2]} | head -n {rng.randint(20, 400)}{m[3]}", content)
    elif content:
        factor = rng.choice((0.25, 0.5, 1.0, 1.0, 1.5, 2.0))
        extra = content[: int(len(content) * (factor - 1))] if factor > 1 else ""
        content = content[: max(1, int(len(content) * factor))] + extra
    return {**message, "content": content}


def synthesize(records: list[dict], index: int, rng: random.Random, resolved: bool = True) -> dict:
    """Record ``index``: a source record with its own ids and varied steps (see the module)."""
    base = records[index % len(records)]
    units = _units(base["messages"])
    varied: list[list[dict]] = [units[0]]
    for unit in units[1:-1]:
        draw = rng.random()
        copies = 0 if draw < 0.1 else 2 if draw > 0.9 else 1
        varied += [unit] * copies
    varied.append(units[-1])
    messages = base["messages"][:2] + [_vary_text(m, rng) for unit in varied for m in unit]
    instance_id = f"{base['instance_id']}.s{index:05d}"
    suffix = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=8))
    return {**base, "messages": messages, "instance_id": instance_id, "traj_id": f"{instance_id}.{suffix}",
            "id": f"{instance_id}.{suffix}_1", "resolved": resolved}  # fmt: skip


def write_inputs(path: Path, records: list[dict], count: int, seed: int) -> int:
    """``count`` resolved records and one unresolved one per 20, as JSONL; returns the bytes written."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as handle:
        for index in range(count + count // 20):
            record = synthesize(records, index, rng, resolved=index < count)
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path.stat().st_size


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - start, result


def json_load(path: Path) -> int:
    with path.open(encoding="utf-8") as handle:
        return sum(1 for line in handle if json.loads(line))


def import_stage(raw: Path, native: Path) -> int:
    """``swe-srl trajectories import RAW -o NATIVE --resolved-only``."""
    found, _ = import_with_stats(str(raw))
    kept, _ = select(found, resolved_only=True)
    write_jsonl(native, kept)
    return len(kept)


def decompose_stage(native: Path, out: Path, history: int, holdout: int):
    """``swe-srl decompose NATIVE -o OUT --history K --holdout-trajectories N``."""
    trajs, _ = import_with_stats(str(native))
    samples, stats = decompose(trajs, history=history, holdout_trajectories=holdout)
    atomic_write_text(out, samples.text())
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=5000)
    parser.add_argument("--history", type=int, default=2)
    parser.add_argument("--holdout", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--source", type=Path, default=SHARED if SHARED.is_file() else FIXTURE)
    parser.add_argument("--no-read", action="store_true", help="Skip timing read_samples.")
    args = parser.parse_args()
    records = source_records(args.source)
    with tempfile.TemporaryDirectory() as tmp:
        raw, native, out = (
            Path(tmp) / "swe-smith.jsonl",
            Path(tmp) / "native.jsonl",
            Path(tmp) / "samples.jsonl",
        )
        size = write_inputs(raw, records, args.trajectories, args.seed)
        baseline, rows = timed(json_load, raw)
        imported, kept = timed(import_stage, raw, native)
        decomposed, stats = timed(decompose_stage, native, out, args.history, args.holdout)
        read = timed(read_samples, out)[0] if not args.no_read else None
        report(args, size, rows, kept, stats, out.stat().st_size, (baseline, imported, decomposed, read))


def report(args, size: int, rows: int, kept: int, stats, out_size: int, seconds) -> None:
    baseline, imported, decomposed, read = seconds
    title = (f"{rows} SWE-smith-shaped records ({size / 1e6:.0f} MB, from {args.source.name}) → {kept} resolved "
             f"trajectories → {stats.samples} samples (--history {args.history}, "
             f"--holdout-trajectories {args.holdout}: {stats.splits['test']} held-out samples)")  # fmt: skip
    table = Table(title=title)
    for column in ("stage", "seconds", "vs json.load"):
        table.add_column(column, justify="left" if column == "stage" else "right")
    stages = [("json.load of the inputs", baseline), ("trajectories import --resolved-only", imported),
              ("decompose --history --holdout-trajectories", decomposed)]  # fmt: skip
    if read is not None:
        stages.append(("read_samples (prompts built)", read))
    for name, value in stages:
        table.add_row(name, f"{value:.1f}", f"{value / baseline:.2f}x")
    table.add_row(
        "import + decompose", f"{imported + decomposed:.1f}", f"{(imported + decomposed) / baseline:.2f}x"
    )
    Console().print(table)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    print(f"samples file: {out_size / 1e6:.1f} MB, {out_size / max(stats.samples, 1) / 1000:.2f} KB/sample; "
          f"import + decompose: {(imported + decomposed) / 60:.2f} min for {kept} trajectories; "
          f"peak RSS {peak:.1f} GB")  # fmt: skip


if __name__ == "__main__":
    main()
