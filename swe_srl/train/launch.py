"""What ``swe-srl train`` runs: the configured method (SRL, or the SFT baseline), once or over seeds 0..N-1.

``--seeds N`` trains N times into ``OUTPUT/seed-K/`` (``seed`` and the tiny model's init seed set to K, so seed K of
``--method srl`` and of ``--method sft`` start from the same model) and writes ``OUTPUT/seeds.json``: every seed's
held-out means (final policy, starting policy, every trivial baseline; both rewards) and their mean ± std over seeds.
"""

from __future__ import annotations

import json
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from swe_srl.infra.sandbox.placement import select_sandboxes
from swe_srl.infra.sandbox.remote import ensure_reachable
from swe_srl.paths import atomic_write_text
from swe_srl.train.card import data_facts, model_card
from swe_srl.train.config import TrainConfig, start_of
from swe_srl.train.preflight import check_fits
from swe_srl.train.record import write_config
from swe_srl.train.run import default_command, run_training, split_samples, write_summary
from swe_srl.train.sft_run import SftPolicy, save_policy, sft_summary, train_sft
from swe_srl.train.sharding import shard_on_cpu


def run_sft(config: TrainConfig, *, console=None, command: str | None = None) -> dict[str, Any]:
    """The SFT baseline: same start, samples, steps, learning rate and prompts per step as SRL; same outputs."""
    started, command = time.monotonic(), command or default_command()
    out = config.output_dir
    shutil.rmtree(out / "tiny-model", ignore_errors=True)
    write_config(config)
    start = start_of(config)
    sample_set, train_rows, test_rows = split_samples(config)
    policy = SftPolicy(config, train_rows)
    fitted_test = policy.fit(test_rows)
    initial = policy.greedy(fitted_test)
    # the rows SRL trains on (plain unless swap_library_names is set for this run)
    rows = start.training_rows(config, train_rows)
    losses = train_sft(policy, rows, out, config.seed)
    save_policy(policy, out / "final")
    counts = {"samples_file": str(sample_set.path), **start.counts(config, train_rows)}
    summary = sft_summary(policy, losses, {**counts, "test_samples": len(test_rows)}, out)
    summary.update(start.model_summary(Path(summary["model"])))
    held = (train_rows, fitted_test, initial, policy.greedy(fitted_test))
    write_summary(config, summary, held, policy.tokenizer, console, started, command)
    data = data_facts(config, sample_set, train_rows, test_rows)
    card = model_card(config, policy.args, start.describe(config), data, summary, command)
    atomic_write_text(out / "final" / "README.md", card)
    atomic_write_text(out / "README.md", card)
    return summary


def run_method(config: TrainConfig, *, console=None, command: str | None = None) -> dict[str, Any]:
    """One run of the configured method (``run_training`` runs SRL and RLVR)."""
    if config.method == "sft":
        return run_sft(config, console=console, command=command)
    select_sandboxes(config.sandboxes)  # where the effect layer's and RLVR's sandboxes run
    ensure_reachable()
    check_fits(config)  # on CUDA: the memory plan before any weights load
    shard_on_cpu()  # an FSDP launch on CPU shards as on GPUs (accelerate alone would run it as data parallel)
    return run_training(config, console=console, command=command)


def _spread(values: list[float]) -> dict[str, float]:
    return {"mean": statistics.fmean(values), "std": statistics.stdev(values) if len(values) > 1 else 0.0}


def aggregate(runs: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """policy → reward → mean ± std over the runs' held-out means (policies every run has)."""
    means = [r["means"] for r in runs]
    names = [n for n in means[0] if all(n in m for m in means)] if means else []
    return {
        name: {reward: _spread([m[name][reward] for m in means]) for reward in means[0][name]}
        for name in names
    }


def run_seeds(config: TrainConfig, seeds: int, *, console=None, command: str | None = None) -> dict[str, Any]:
    """The configured method with seeds 0..seeds-1 into ``OUTPUT/seed-K``; writes and returns ``seeds.json``."""
    command, root, runs = command or default_command(), config.output_dir, []
    for seed in range(seeds):
        tiny = config.tiny.model_copy(update={"seed": seed})
        run = config.model_copy(update={"seed": seed, "tiny": tiny, "output": str(root / f"seed-{seed}")})
        if console is not None:
            console.rule(f"--method {config.method}: seed {seed} of 0..{seeds - 1} → {run.output}")
        summary = run_method(run, console=console, command=command)
        heldout = summary.get("heldout") or {}
        runs.append({"seed": seed, "output": run.output, "steps": summary.get("steps"),
                     "samples": heldout.get("samples"), "means": heldout.get("means", {}),
                     "by_step": heldout.get("by_step", {})})  # fmt: skip
    record = {
        "method": config.method,
        "seeds": list(range(seeds)),
        "runs": runs,
        "over_seeds": aggregate(runs),
    }
    record["command"] = command
    atomic_write_text(root / "seeds.json", json.dumps(record, indent=2) + "\n")
    return record
