"""A finished run's start and trained policies mixed in weight space, decoded greedily on its held-out samples.

WiSE-FT (Wortsman et al., 2022; ``wise_ft``, :mod:`swe_srl.train.wise`) takes ``(1 − a) × start + a × trained``,
parameter by parameter: the start is the run's ``tiny-model/`` (the warm-up's output), the trained weights its last
``checkpoint-*`` (GRPO's own, whatever ``wise_ft`` the run saved in ``final/``). For each ``a`` this decodes every
line of the run's ``heldout.jsonl`` greedily from its recorded ``messages`` (the report's own decoding:
``heldout.greedy_outputs``, batches of ``eval.batch_size``; slots mapped back with its ``slots``),
scores it under both rewards (layered with the effect layer off, as the held-out report does) and prints the mean
with the paired 95% interval against the run's start. ``a = 0`` and the run's own ``wise_ft`` (``summary.json``; 1
before the option) must reproduce the recorded starting and final outputs (the ``same`` column): the check that the
decoding is the report's. Nothing is trained; one torch thread; a tiny run's 63 dev samples take seconds per ``a``.

    python bench/interpolate.py RUN [RUN ...] [--alphas 0,0.5,1] [--max-new-tokens 32] [--batch-size 8]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from swe_srl.eval.baselines import paired_bootstrap
from swe_srl.train.heldout import greedy_outputs, scores
from swe_srl.train.policy import think_prefix
from swe_srl.train.tiny.slots import unslotted_outputs
from swe_srl.train.wise import mixed_state, snapshot


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--alphas", default="0,0.5,1")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument(
        "--batch-size", type=int, default=8, help="as eval.batch_size (the report's decoding)"
    )
    args = parser.parse_args(argv)
    alphas = [float(a) for a in args.alphas.split(",")]
    torch.set_num_threads(1)
    for run in args.runs:
        checkpoints = sorted(run.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1]))
        missing = [p for p in ("heldout.jsonl", "summary.json", "tiny-model") if not (run / p).exists()]
        missing += [] if checkpoints else ["checkpoint-*"]
        if missing:
            print(f"{run}: no {', '.join(missing)} (a finished tiny run's folder is needed)", file=sys.stderr)
            return 2
        rows = [json.loads(line) for line in (run / "heldout.jsonl").read_text().splitlines()]
        saved = json.loads((run / "summary.json").read_text()).get("wise_ft", 1.0)
        tokenizer = AutoTokenizer.from_pretrained(run / "tiny-model")
        start = snapshot(AutoModelForCausalLM.from_pretrained(run / "tiny-model"))
        model = AutoModelForCausalLM.from_pretrained(checkpoints[-1]).eval()
        trained = {k: v.clone() for k, v in model.state_dict().items()}
        initial = scores([r["initial_output"] for r in rows], rows)
        prompts, prefix = [r["messages"] for r in rows], think_prefix(tokenizer)
        for a in alphas:
            model.load_state_dict(mixed_state(start, trained, a))
            raw = greedy_outputs(model, tokenizer, prompts, args.max_new_tokens, args.batch_size, prefix)
            outputs = unslotted_outputs(raw, rows)
            cells = []
            for mode, values in scores(outputs, rows).items():
                p = paired_bootstrap(values, initial[mode])
                cells.append(
                    f"{mode} {sum(values) / len(values):.3f} ({p['mean_diff']:+.3f} [{p['low']:+.3f}, {p['high']:+.3f}])"
                )
            recorded = {0.0: "initial_output", saved: "final_output"}.get(a)
            same = (
                f"  same {sum(o == r[recorded] for o, r in zip(outputs, rows, strict=True))}/{len(rows)}"
                if recorded
                else ""
            )
            print(f"{run.name}  a={a:g}  " + "  ".join(cells) + same, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
