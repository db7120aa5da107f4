"""The held-out report: every test-split sample decoded greedily by the starting and the trained policy, scored
under the paper reward and the layered reward, next to the trivial baselines with paired bootstrap intervals.

``heldout.jsonl`` (one line per test sample) holds what the model saw and said, so a reader can re-score any line:
``swe-srl reward --expert E --action OUTPUT`` reproduces the recorded rewards. The layered reward here runs with the
effect layer off (a pure function of the two texts), whatever the training reward used.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from swe_srl.eval.baselines import baseline_actions, baseline_outputs, compare
from swe_srl.paths import atomic_write_text
from swe_srl.rewards import score_output

REWARDS = ("srl", "layered")
MARGIN = 0.05
"""The learning target: the final policy beats every baseline and its start by this much, interval above 0."""
STEP_ROWS = 8
"""The printed per-step table shows steps 0 … 6 each and the later ones together (``7+``); summary.json has all."""


def greedy_outputs(
    model, tokenizer, prompts: Sequence[list[dict]], max_new_tokens: int, batch_size: int, prefix: str
) -> list[str]:
    """The whole text the reward scores (``prefix`` the generation prompt wrote + the greedy completion), per prompt.

    Under several processes (``torch.distributed`` initialized) every rank decodes its share of the prompts
    (``rank::world``) and all ranks get every output: every process must call it. Each rank makes the same number
    of ``generate`` calls (a short share repeats its last prompt), as a sharded model's collectives need."""
    world, rank = _world()
    if world == 1 or not prompts:
        return _decode(model, tokenizer, prompts, max_new_tokens, batch_size, prefix)
    import torch.distributed as dist

    mine = list(range(rank, len(prompts), world)) or [0]
    share = -(-len(prompts) // world)
    mine += mine[-1:] * (share - len(mine))
    outputs = _decode(model, tokenizer, [prompts[i] for i in mine], max_new_tokens, batch_size, prefix)
    gathered: list[list[str]] = [[] for _ in range(world)]
    dist.all_gather_object(gathered, outputs)
    merged: list[str] = [""] * len(prompts)
    for r, theirs in enumerate(gathered):
        for i, text in zip(range(r, len(prompts), world), theirs, strict=False):
            merged[i] = text
    return merged


def _world() -> tuple[int, int]:
    """(processes, this one's rank): (1, 0) outside ``torch.distributed``."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size(), dist.get_rank()
    return 1, 0


def _decode(
    model, tokenizer, prompts: Sequence[list[dict]], max_new_tokens: int, batch_size: int, prefix: str
) -> list[str]:
    """Greedy completions of ``prompts`` in batches of ``batch_size`` (left-padded) on this process."""
    import torch

    was_training, side = model.training, tokenizer.padding_side
    model.eval()
    tokenizer.padding_side = "left"
    outputs: list[str] = []
    try:
        for start in range(0, len(prompts), batch_size):
            texts = [prompt_text(tokenizer, p) for p in prompts[start : start + batch_size]]
            enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(
                model.device
            )
            with torch.no_grad():
                out = model.generate(
                    **enc, do_sample=False, max_new_tokens=max_new_tokens, pad_token_id=tokenizer.pad_token_id
                )
            completions = tokenizer.batch_decode(
                out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True
            )
            outputs.extend(prefix + c for c in completions)
    finally:
        model.train(was_training)
        tokenizer.padding_side = side
    return outputs


def prompt_text(tokenizer, messages: list[dict]) -> str:
    """The prompt exactly as the model sees it: the chat template with the generation prompt."""
    return str(tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False))


def scores(outputs: Sequence[str], rows: Sequence[dict]) -> dict[str, list[float]]:
    """reward name → one score per (output, row)."""
    return {
        mode: [
            score_output(o, str(r["expert_action"]), mode=mode).total
            for o, r in zip(outputs, rows, strict=True)
        ]
        for mode in REWARDS
    }


def layer_means(outputs: Sequence[str], rows: Sequence[dict]) -> dict[str, float]:
    """The layered reward's layers (syntax, semantic, ...; effect off) averaged over the outputs."""
    results = [
        score_output(o, str(r["expert_action"]), mode="layered") for o, r in zip(outputs, rows, strict=True)
    ]
    names = sorted({name for result in results for name in result.components})
    return {name: _mean([result.components.get(name, 0.0) for result in results]) for name in names}


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def by_step(rows: Sequence[dict], initial: dict[str, list[float]], final: dict[str, list[float]]) -> dict:
    """Per target step index (its place in the trajectory): samples, the start's and the final's means under both
    rewards; where training gained and where it lost what the start already did."""
    groups: dict[int, list[int]] = {}
    for k, row in enumerate(rows):
        groups.setdefault(int(row["step"]), []).append(k)
    return {
        str(step): {"samples": len(ks)}
        | {
            f"{who}_{m}": _mean([s[m][k] for k in ks])
            for who, s in (("initial", initial), ("final", final))
            for m in REWARDS
        }
        for step, ks in sorted(groups.items())
    }


def heldout_report(
    out_dir: Path,
    train_rows: Sequence[dict],
    test_rows: Sequence[dict],
    tokenizer,
    initial_outputs: Sequence[str],
    final_outputs: Sequence[str],
    split: str = "test",
) -> dict[str, Any]:
    """Write ``heldout.jsonl`` and return the report: means per policy and baseline, final − each, and whether the
    final policy reaches the learning target (``MARGIN``, paired 95% interval above 0) under both rewards."""
    initial, final = scores(initial_outputs, test_rows), scores(final_outputs, test_rows)
    lines = []
    for k, row in enumerate(test_rows):
        record = {
            "id": f"{row['instance_id']}#{row['step']}",
            "instance_id": row["instance_id"],
            "step": row["step"],
            "prompt": prompt_text(tokenizer, row["prompt"]),
            "messages": row["prompt"],
            "oracle_paths": list(row.get("oracle_files") or []),
            "expert_action": row["expert_action"],
            "initial_output": initial_outputs[k],
            "final_output": final_outputs[k],
            "initial_reward": {m: initial[m][k] for m in REWARDS},
            "final_reward": {m: final[m][k] for m in REWARDS},
        }
        if "slots" in row:  # a slotted policy's slot → name map, as its outputs were mapped back
            record["slots"] = json.loads(row["slots"])
        lines.append(json.dumps(record) + "\n")
    atomic_write_text(out_dir / "heldout.jsonl", "".join(lines))
    others = {"initial": initial}
    for name, actions in baseline_actions(train_rows, test_rows).items():
        others[name] = scores(baseline_outputs(actions), test_rows)
    report: dict[str, Any] = {
        "split": split,
        "samples": len(test_rows),
        "layered_effect": "off",
        "margin": MARGIN,
    }
    report["means"] = {"final": {m: _mean(final[m]) for m in REWARDS}}
    report["means"].update({name: {m: _mean(s[m]) for m in REWARDS} for name, s in others.items()})
    report["by_step"] = by_step(test_rows, initial, final)
    report["layers"] = {
        "final": layer_means(final_outputs, test_rows),
        "initial": layer_means(initial_outputs, test_rows),
    }
    if test_rows:
        report["final_vs"] = {
            m: compare(final[m], {n: s[m] for n, s in others.items()}, margin=MARGIN) for m in REWARDS
        }
        report["target_met"] = all(v["beats"] for m in REWARDS for v in report["final_vs"][m].values())
    return report


def report_table(report: dict[str, Any]) -> Table:
    """The printed form: one row per policy/baseline, mean under both rewards and final − it with its interval."""
    table = Table(
        title=f"held-out {report.get('split', 'test')} split: {report['samples']} samples (layered reward: effect off)"
    )
    table.add_column("policy")
    for mode in REWARDS:
        table.add_column(f"{mode} mean", justify="right")
        table.add_column(f"final − it [95% CI] ({mode})", justify="right")
    for name, means in report["means"].items():
        cells = []
        for mode in REWARDS:
            cells.append(f"{means[mode]:+.3f}")
            vs = report.get("final_vs", {}).get(mode, {}).get(name)
            cells.append(
                "" if vs is None else f"{vs['mean_diff']:+.3f} [{vs['low']:+.3f}, {vs['high']:+.3f}]"
            )
        table.add_row(name, *cells)
    layers = report.get("layers") or {}
    if layers.get("final"):
        table.caption = "layers (layered reward), start → final: " + ", ".join(
            f"{name} {layers['initial'].get(name, 0.0):.3f} → {value:.3f}"
            for name, value in layers["final"].items()
        )
    return table


def step_table(report: dict[str, Any]) -> Table:
    """The per-step form: start → final under both rewards per step index, and each step's share of the change in
    the mean ((final − start) × its samples / all samples; the shares add up to final − start)."""
    total = report["samples"]
    groups: dict[str, list[dict[str, float]]] = {}
    for step, cell in report.get("by_step", {}).items():
        groups.setdefault(step if int(step) < STEP_ROWS - 1 else f"{STEP_ROWS - 1}+", []).append(cell)
    table = Table(title="held-out by step index (start → final; share: of final − start)")
    table.add_column("step")
    table.add_column("samples", justify="right")
    for mode in REWARDS:
        table.add_column(mode, justify="right")
        table.add_column("share", justify="right")
    for key, group in groups.items():
        n = sum(c["samples"] for c in group)
        row = [key, str(n)]
        for mode in REWARDS:  # sums over the group's samples: a merged row is a sample-weighted mean
            start, end = (
                sum(c[f"{who}_{mode}"] * c["samples"] for c in group) for who in ("initial", "final")
            )
            row += [f"{start / n:.3f} → {end / n:.3f}", f"{(end - start) / total:+.3f}"]
        table.add_row(*row)
    return table
