"""The tiny warm-up alone, probed on the dev split: greedy rewards at checkpoints, next to the frequent action.

What a run's *start* would be (no GRPO), for choosing warm-up options on dev only: the samples of the main command
(``swe-srl train --oracle-files``: the bundled suite's, cached by its inputs; ``samples=PATH`` another file), the
tokenizer and model of the tiny default, the warm-up itself (``tiny.format_warmup``; renamed copies with ``aug=K``),
one torch thread, and at each check the greedy outputs of the 57 dev samples scored under both rewards, the layered
reward's layers, the paired mean over the frequent action at the step, and ``copy_rate``: the share of the dev
pytest targets whose test name the output contains (the name is only in the problem statement).

    python bench/warmup_probe.py checks=200,400 [aug=2] [decay=0.5] [split=dev] [gen=32] [samples=F] [-o OUT] [TINY=V]

``TINY=V`` is any ``tiny.*`` option (``warmup_prompt_weight=0.3``, ``seed=1``, ``slots=1``: slotted names,
:mod:`swe_srl.train.tiny.slots`, the outputs mapped back before scoring; no ``forced_copy`` then). ``decay`` lets the rate fall linearly
to 0 over that share of the last steps. With ``induction_steps=N`` / ``induction_every=K`` (induction steps before
and between the warm-up's: :mod:`swe_srl.train.tiny.induction`) each check also reports ``induction_acc`` (greedy
accuracy on fresh repeats of dev-prompt windows) and ``forced_copy`` (given the expert's action up to its test
name's ``test_``, the share of dev pytest targets whose name the greedy continuation completes). Prints one
JSON line per check; ``-o`` writes them all with the outputs.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

from swe_srl.core.actions import THINK_CLOSE, THINK_OPEN
from swe_srl.eval.baselines import baseline_actions, baseline_outputs
from swe_srl.paths import atomic_write_text
from swe_srl.train.config import TinyOptions, TrainConfig
from swe_srl.train.data import read_samples, split_rows
from swe_srl.train.fitting import fit_rows
from swe_srl.train.heldout import greedy_outputs, layer_means, prompt_text, scores
from swe_srl.train.overrides import apply_override
from swe_srl.train.samples import default_sample_set
from swe_srl.train.tiny.augment import TEST_NAME
from swe_srl.train.tiny.induction import RepeatedSpans
from swe_srl.train.tiny.model import build_model, build_tokenizer, format_warmup, sample_texts
from swe_srl.train.tiny.slots import unslotted_outputs, view_of
from swe_srl.train.tiny.start import warmup_split


def _mean(values) -> float:
    return sum(values) / len(values)


def forced_copy(model, tokenizer, held: list[dict]) -> float:
    """Given each dev pytest target up to its test name's ``test_``, the share whose greedy continuation completes
    the name (the name stands in the problem statement)."""
    hits = total = 0
    model.eval()
    for row in held:
        names = TEST_NAME.findall(row["expert_action"])
        if not names:
            continue
        action = row["expert_action"]
        cut = action.index(names[0]) + len("test_")
        text = f"{prompt_text(tokenizer, row['prompt'])}{THINK_CLOSE}\n{action[:cut]}"
        ids = tokenizer(text, add_special_tokens=False, return_tensors="pt")
        with torch.no_grad():
            out = model.generate(ids["input_ids"], max_new_tokens=16, do_sample=False)
        rest = tokenizer.decode(out[0, ids["input_ids"].shape[1] :], skip_special_tokens=True)
        total, hits = total + 1, hits + rest.startswith(names[0][5:])
    model.train()
    return hits / max(1, total)


def probe(args: dict[str, str]) -> list[dict]:
    checks = sorted(int(x) for x in args.pop("checks", "200").split(","))
    split, gen, out = args.pop("split", "dev"), int(args.pop("gen", "32")), args.pop("-o", None)
    samples = args.pop("samples", None)
    args["warmup_renamed_copies"] = args.pop("aug", "0")
    decay = float(args.pop("decay", "0"))
    options: dict = {}
    for key, value in args.items():  # the values as `swe-srl train --set tiny.KEY=VALUE` reads them
        apply_override(options, f"{key}={value}")
    opts = TinyOptions(**{**options, "warmup_steps": checks[-1]})
    torch.set_num_threads(1)
    samples = samples or default_sample_set(True, expert_seeds=TrainConfig().expert_seeds).path
    train, held = split_rows(read_samples(samples), 0.1, split)
    tokenizer = build_tokenizer(sample_texts(train, opts.slots), opts.vocab_size, opts.slots)
    model = build_model(tokenizer, opts)
    held = fit_rows(view_of(tokenizer).rows(held), opts.max_prompt_tokens, tokenizer)
    frequent = scores(baseline_outputs(baseline_actions(train, held)["frequent_at_step"]), held)
    last, fall, ramp = checks[-1], int(decay * checks[-1]), max(1, opts.warmup_ramp)
    started, results = time.monotonic(), []
    induction = opts.induction_steps or opts.induction_every
    texts = (
        [str(tokenizer.apply_chat_template(r["prompt"], tokenize=False)) for r in held] if induction else []
    )
    prompts = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
    gauge = RepeatedSpans(model, tokenizer.pad_token_id, prompts, opts.seed)  # measures only: dev repeats

    def check(step: int, loss: float) -> None:
        if step not in checks:
            return
        extra = {} if opts.slots else {"forced_copy": forced_copy(model, tokenizer, held)}
        if induction:
            extra["induction_acc"] = gauge.accuracy()
        raw = greedy_outputs(model, tokenizer, [r["prompt"] for r in held], gen, 8, THINK_OPEN)
        outputs = unslotted_outputs(raw, held)  # a slotted policy's slots mapped back
        got = scores(outputs, held)
        named = [
            (n, o)
            for r, o in zip(held, outputs, strict=True)
            for n in TEST_NAME.findall(r["expert_action"])[:1]
        ]
        record = {
            "step": step,
            "seconds": round(time.monotonic() - started),
            "loss": loss,
            "srl": _mean(got["srl"]),
            "layered": _mean(got["layered"]),
            **layer_means(outputs, held),
            "vs_frequent_srl": _mean([a - b for a, b in zip(got["srl"], frequent["srl"], strict=True)]),
            "vs_frequent_layered": _mean(
                [a - b for a, b in zip(got["layered"], frequent["layered"], strict=True)]
            ),
            "copy_rate": sum(n in o for n, o in named) / max(1, len(named)),
            **extra,
        }
        print(json.dumps(record), flush=True)
        results.append({**record, "outputs": outputs})

    format_warmup(
        model,
        tokenizer,
        warmup_split(TrainConfig(tiny=opts), train)[0],  # the default's warm-up rows (tiny.warmup_share)
        opts,
        lr_factor=(lambda s: min(1.0, (s + 1) / ramp, (last - s) / fall)) if fall else None,
        on_step=check,
    )
    if out:
        atomic_write_text(Path(out), json.dumps({"options": opts.model_dump(), "checks": results}) + "\n")
    return results


if __name__ == "__main__":
    argv, pairs = sys.argv[1:], {}
    for i, item in enumerate(argv):
        if item == "-o":
            pairs["-o"] = argv[i + 1]
        elif "=" in item:
            key, value = item.split("=", 1)
            pairs[key] = value
    probe(pairs)
