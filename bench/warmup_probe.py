"""The tiny warm-up alone, probed on the dev split: greedy rewards at checkpoints, next to the frequent action.

What a run's *start* would be (no GRPO), for choosing warm-up options on dev only: the bundled samples (built by a
first ``swe-srl train --oracle-files``; the newest cached samples file), the tokenizer and model of the tiny default,
the warm-up itself (``tiny.format_warmup``; renamed copies with ``aug=K``), one torch thread, and at each check the
greedy outputs of the 57 dev samples scored under both rewards, the layered reward's layers, the paired mean over the
frequent action at the step, and ``copy_rate``: the share of the dev pytest targets whose test name the output
contains (the name is only in the problem statement).

    python bench/warmup_probe.py checks=200,400 [aug=2] [decay=0.5] [split=dev] [gen=32] [-o OUT.json] [TINY=V ...]

``TINY=V`` is any ``tiny.*`` option (``warmup_prompt_weight=0.3``, ``seed=1``). ``decay`` lets the rate fall linearly
to 0 over that share of the last steps. ``induction=N`` first trains N steps of *induction* (a stand-in for the
copying a pretrained model has: a window of a train prompt, other text, then the window again, the loss on the
repeat), ``induction_every=K`` adds one such step after every K warm-up steps; each check then also reports
``induction_acc`` (next-token accuracy on fresh repeats) and ``forced_copy`` (given the expert's action up to its
test name's ``test_``, the share of dev pytest targets whose name the greedy continuation completes). Prints one
JSON line per check; ``-o`` writes them all with the outputs.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

import torch

from swe_srl.core.actions import THINK_OPEN
from swe_srl.eval.baselines import baseline_actions, baseline_outputs
from swe_srl.paths import atomic_write_text, cache_dir
from swe_srl.train.augment import TEST_NAME
from swe_srl.train.config import TinyOptions
from swe_srl.train.data import read_samples, split_rows
from swe_srl.train.fitting import fit_rows
from swe_srl.train.heldout import greedy_outputs, layer_means, scores
from swe_srl.train.tiny import build_model, build_tokenizer, format_warmup, sample_texts


def _mean(values) -> float:
    return sum(values) / len(values)


class Induction:
    """Repeated spans of train prompts (window, other text, the window again; loss on the repeat after its first
    token) and an AdamW of their own: the probe's stand-in for pretrained copying."""

    def __init__(
        self, model, tokenizer, rows: list[dict], seed: int, lr: float = 3e-3, span: int = 96
    ) -> None:
        self.model, self.pad, self.span, self.rng = model, tokenizer.pad_token_id, span, random.Random(seed)
        self.streams = [
            tokenizer(
                str(tokenizer.apply_chat_template(r["prompt"], tokenize=False)), add_special_tokens=False
            )["input_ids"]
            for r in rows
        ]
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        self.schedule = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda s: min(1.0, (s + 1) / 20))

    def _window(self, n: int) -> list[int]:
        s = self.rng.choice(self.streams)
        start = self.rng.randrange(len(s) - n) if len(s) > n else 0
        return list(s[start : start + n])

    def loss(self, size: int = 8) -> tuple[torch.Tensor, float]:
        """(mean NLL, next-token accuracy) on the repeats of ``size`` fresh sequences."""
        seqs, masks = [], []
        for _ in range(size):
            x = self._window(self.rng.randint(8, self.span))
            pre, mid = self._window(self.rng.randint(0, 256)), self._window(self.rng.randint(0, 128))
            seqs.append(pre + x + mid + x)
            masks.append([0] * (len(pre) + len(x) + len(mid) + 1) + [1] * (len(x) - 1))
        width = max(map(len, seqs))
        ids = torch.tensor([s + [self.pad] * (width - len(s)) for s in seqs])
        attention = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs])
        weight = torch.tensor([m + [0] * (width - len(m)) for m in masks], dtype=torch.float)[:, 1:]
        logits = self.model(input_ids=ids, attention_mask=attention).logits[:, :-1]
        nll = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1), reduction="none"
        ).view(len(seqs), -1)
        accuracy = ((logits.argmax(-1) == ids[:, 1:]).float() * weight).sum() / weight.sum()
        return (nll * weight).sum() / weight.sum(), accuracy.item()

    def step(self) -> None:
        self.model.train()
        self.loss()[0].backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.schedule.step()
        self.optimizer.zero_grad()


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
        text = tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True, tokenize=False)
        ids = tokenizer(f"{text}</think>\n{action[:cut]}", add_special_tokens=False, return_tensors="pt")
        with torch.no_grad():
            out = model.generate(ids["input_ids"], max_new_tokens=16, do_sample=False)
        rest = tokenizer.decode(out[0, ids["input_ids"].shape[1] :], skip_special_tokens=True)
        total, hits = total + 1, hits + rest.startswith(names[0][5:])
    model.train()
    return hits / max(1, total)


def probe(args: dict[str, str]) -> list[dict]:
    checks = sorted(int(x) for x in args.pop("checks", "200").split(","))
    split, gen, out = args.pop("split", "dev"), int(args.pop("gen", "32")), args.pop("-o", None)
    args["warmup_renamed_copies"] = args.pop("aug", "0")
    decay = float(args.pop("decay", "0"))
    induction, every = int(args.pop("induction", "0")), int(args.pop("induction_every", "0"))
    defaults = TinyOptions()
    options = {k: type(getattr(defaults, k))(v) for k, v in args.items()}
    opts = TinyOptions(**{**options, "warmup_steps": checks[-1]})
    torch.set_num_threads(1)
    files = sorted(cache_dir("samples").glob("samples-*.jsonl"), key=lambda p: p.stat().st_mtime)
    if not files:
        sys.exit("no cached samples: run `swe-srl train --oracle-files` once first")
    train, held = split_rows(read_samples(files[-1]), 0.1, split)
    tokenizer = build_tokenizer(sample_texts(train), opts.vocab_size)
    model = build_model(tokenizer, opts)
    held = fit_rows(held, opts.max_prompt_tokens, tokenizer)
    frequent = scores(baseline_outputs(baseline_actions(train, held)["frequent_at_step"]), held)
    last, fall, ramp = checks[-1], int(decay * checks[-1]), max(1, opts.warmup_ramp)
    started, results = time.monotonic(), []
    copier = Induction(model, tokenizer, fit_rows(train, opts.max_prompt_tokens, tokenizer), opts.seed)
    for _ in range(induction if induction or every else 0):
        copier.step()

    def check(step: int, loss: float) -> None:
        if every and step % every == 0:
            copier.step()
        if step not in checks:
            return
        extra = {}
        if induction or every:
            with torch.no_grad():
                extra = {
                    "induction_acc": copier.loss(16)[1],
                    "forced_copy": forced_copy(model, tokenizer, held),
                }
        outputs = greedy_outputs(model, tokenizer, [r["prompt"] for r in held], gen, 8, THINK_OPEN)
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
        train,
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
