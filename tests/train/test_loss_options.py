"""Loss options of SRL/RLVR practice on the tiny model, each seen in its effect and in the metrics: the auxiliary SFT
term (``loss.sft_weight``) and TRL's entropy bonus (``trl.entropy_coef``). A constant reward makes the GRPO term
zero, so whatever moves the policy is the option under test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from conftest import TINY, ConstantReward  # noqa: E402

from swe_srl.train.config import load_config  # noqa: E402
from swe_srl.train.data import read_samples, split_rows  # noqa: E402
from swe_srl.train.run import run_training  # noqa: E402
from swe_srl.train.sft import completion_nll, pad_left, sft_target, target_batch  # noqa: E402

pytestmark = pytest.mark.train

FAST = [
    *TINY,
    "trl.save_steps=10",
    "trl.max_steps=2",
    "eval.max_samples=0",
]


def _model(path: Path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)


def _prompts(tokenizer, rows):
    texts = [
        tokenizer.apply_chat_template(r["prompt"], add_generation_prompt=True, tokenize=False) for r in rows
    ]
    ids = [tokenizer(t, add_special_tokens=False)["input_ids"][-96:] for t in texts]
    return pad_left(ids, tokenizer.pad_token_id), pad_left([[1] * len(i) for i in ids], 0)


def expert_nll(path: Path, rows: list[dict]) -> float:
    model, tokenizer = _model(path)
    prompt_ids, prompt_mask = _prompts(tokenizer, rows)
    batch = target_batch(
        [sft_target(tokenizer, r["expert_action"], max_tokens=8) for r in rows], tokenizer.pad_token_id
    )
    with torch.no_grad():
        return completion_nll(model, prompt_ids, prompt_mask, **batch).item()


def next_token_entropy(path: Path, rows: list[dict]) -> float:
    model, tokenizer = _model(path)
    prompt_ids, prompt_mask = _prompts(tokenizer, rows)
    with torch.no_grad():
        logits = model(input_ids=prompt_ids, attention_mask=prompt_mask).logits[:, -1].float()
    return torch.distributions.Categorical(logits=logits).entropy().mean().item()


def _train(samples_file: Path, out: Path, sets: list[str]) -> list[dict]:
    cfg = load_config(None, [*FAST, *sets], samples=str(samples_file), output=str(out))
    run_training(cfg, reward_func=ConstantReward())
    return [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if '"reward"' in x]


def test_sft_term_pulls_the_policy_to_the_expert_action(samples_file: Path, tmp_path: Path):
    rows = split_rows(read_samples(samples_file))[0][:12]
    out = tmp_path / "sft"
    # every group has zero variance: dynamic sampling masks them all, so only the SFT term has a gradient
    train = _train(samples_file, out, ["loss.sft_weight=0.5"])
    assert all(r["sft/loss"] > 0 for r in train) and all(
        r["dynamic_sampling/kept_ratio"] == 0.0 for r in train
    )
    assert expert_nll(out / "final", rows) < expert_nll(out / "tiny-model", rows)


def test_entropy_bonus_raises_the_entropy(samples_file: Path, tmp_path: Path):
    rows = split_rows(read_samples(samples_file))[0][:12]
    out = tmp_path / "entropy"
    sets = ["trl.entropy_coef=1.0", "trl.beta=0", "dynamic_sampling.enabled=false", "trl.learning_rate=5e-3"]
    train = _train(samples_file, out, sets)
    assert all(r["entropy_coef"] == 1.0 and "entropy" in r for r in train)
    assert next_token_entropy(out / "final", rows) > next_token_entropy(out / "tiny-model", rows)
