"""Loss options of SRL/RLVR practice on the tiny model, each seen in its effect and in the metrics: the auxiliary SFT
term (``loss.sft_weight``), the replay anchor (``loss.replay_weight``) and TRL's entropy bonus (``trl.entropy_coef``). A constant reward makes the GRPO term
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
from swe_srl.train.tiny.model import turn_weights  # noqa: E402

pytestmark = pytest.mark.train

FAST = [
    *TINY,
    "trl.save_steps=10",
    "trl.max_steps=2",
    "eval.max_samples=0",
    "loss.replay_weight=0",  # the tiny default's anchor off: each test turns on the one term it checks
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


def test_replay_anchor_pulls_the_policy_to_the_expert_on_uniform_train_samples(
    samples_file: Path, tmp_path: Path
):
    rows = split_rows(read_samples(samples_file))[0][:12]
    out = tmp_path / "replay"
    # every group is dropped (constant reward) and there is no SFT term: only the replay anchor has a gradient
    train = _train(samples_file, out, ["loss.replay_weight=0.5", "loss.replay_batch=2"])
    assert all(r["replay/loss"] > 0 for r in train) and all(
        r["dynamic_sampling/kept_ratio"] == 0.0 and "sft/loss" not in r for r in train
    )
    assert expert_nll(out / "final", rows) < expert_nll(out / "tiny-model", rows)
    state = json.loads(next(out.glob("checkpoint-*/refill_state-0.json")).read_text())
    assert set(state["replay"]) == {"generator", "order"}


def test_replay_sampler_passes_over_every_train_row_and_spreads_them_over_the_batch():
    from conftest import make_samples

    from swe_srl.train.anchor import AnchorSampler
    from swe_srl.train.tiny.model import build_tokenizer, sample_texts

    rows = make_samples(3, seed=4)  # 15 rows

    def key(row: dict) -> tuple:
        return row["instance_id"], row["step"]

    sampler = AnchorSampler(rows, count=5, seed=0)
    first_pass = [key(r) for _ in range(3) for r in sampler.draw()]
    assert sorted(first_pass) == sorted(key(r) for r in rows)  # every row once before any row twice
    resumed = AnchorSampler(rows, count=5, seed=1)
    saved = AnchorSampler(rows, count=5, seed=0)
    saved.draw()
    resumed.load_state(saved.state())
    assert [key(r) for r in resumed.draw()] == first_pass[5:10]
    tokenizer = build_tokenizer(sample_texts(rows), 300)
    tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
    sampler = AnchorSampler(
        rows, count=2, seed=0, tokenizer=tokenizer, prefix="<think>", max_tokens=16, thought=False
    )
    batch = sampler.batch(8, "cpu")
    assert batch["anchor_row"].tolist() == [1, 0, 0, 0, 1, 0, 0, 0]
    assert all(v.shape[0] == 8 for v in batch.values())
    assert batch["anchor_loss_mask"][batch["anchor_row"] == 0].sum() == 0
    assert (batch["anchor_prompt_mask"].sum(dim=1) > 1).tolist() == batch["anchor_row"].bool().tolist()


def test_sft_targets_take_the_expert_thought_only_where_the_policy_writes_one():
    """The tiny policy's warm-up and greedy decoding have an empty thought, so its SFT targets (the SFT term, the
    replay anchor, --method sft) do too; a real model's condition on the expert's thought (context, no loss)."""
    from conftest import make_samples

    from swe_srl.train.sft import expert_turn

    row = make_samples(1, seed=5)[2]
    _, _, tokenizer = _warmup_setup([row])
    bare = sft_target(tokenizer, row["expert_action"], "", "<think>", 64)
    assert expert_turn(tokenizer, row, "<think>", 64, thought=False) == bare
    ids, mask = expert_turn(tokenizer, row, "<think>", 64, thought=True)
    context = len(ids) - len(bare[0])
    assert context > 0 and mask[:context] == [0] * context and ids[context:] == bare[0]
    assert tokenizer.decode(ids[:context]).strip() == row["expert_thought"]
    assert load_config(None, []).loss.sft_thought is False
    assert load_config(None, ["model=Qwen/Qwen2.5-Coder-7B-Instruct"]).loss.sft_thought is True
    assert load_config(None, ["loss.sft_thought=true"]).loss.sft_thought is True


def test_entropy_bonus_raises_the_entropy(samples_file: Path, tmp_path: Path):
    rows = split_rows(read_samples(samples_file))[0][:12]
    out = tmp_path / "entropy"
    sets = ["trl.entropy_coef=1.0", "trl.beta=0", "dynamic_sampling.enabled=false", "trl.learning_rate=5e-3"]
    train = _train(samples_file, out, sets)
    assert all(r["entropy_coef"] == 1.0 and "entropy" in r for r in train)
    assert next_token_entropy(out / "final", rows) > next_token_entropy(out / "tiny-model", rows)


def _warmup_setup(rows: list[dict]):
    from swe_srl.train.config import TinyOptions
    from swe_srl.train.tiny import model as tiny

    options = TinyOptions(hidden_size=32, layers=2, heads=2, vocab_size=300, max_prompt_tokens=256)
    tokenizer = tiny.build_tokenizer(tiny.sample_texts(rows), options.vocab_size)
    return tiny, options, tokenizer


def _prompt_nll(model, tokenizer, rows: list[dict]) -> float:
    """Mean next-token NLL of the prompts' own tokens (what the prompt loss trains)."""
    prompt_ids, prompt_mask = _prompts(tokenizer, rows)
    with torch.no_grad():
        logits = model(input_ids=prompt_ids, attention_mask=prompt_mask).logits[:, :-1].float()
    nll = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), prompt_ids[:, 1:].reshape(-1), reduction="none"
    ).view_as(prompt_ids[:, 1:])
    mask = prompt_mask[:, 1:].float()
    return ((nll * mask).sum() / mask.sum()).item()


def test_prompt_weight_mixes_the_prompt_tokens_into_the_loss():
    from conftest import make_samples

    rows = make_samples(4, seed=1)
    tiny, options, tokenizer = _warmup_setup(rows)
    model = tiny.build_model(tokenizer, options)
    # a few target-only steps: the targets get easy, the prompts stay hard, so the two losses differ plainly
    tiny.format_warmup(
        model, tokenizer, rows, options.model_copy(update={"warmup_steps": 80, "warmup_prompt_weight": 0.0})
    )
    model.eval()
    rows = rows[:3]
    prompt_ids, prompt_mask = _prompts(tokenizer, rows)
    batch = target_batch([sft_target(tokenizer, r["expert_action"]) for r in rows], tokenizer.pad_token_id)
    with torch.no_grad():
        target_only = completion_nll(model, prompt_ids, prompt_mask, **batch).item()
        weighted = completion_nll(model, prompt_ids, prompt_mask, **batch, prompt_weight=0.5).item()
    prompt_only = _prompt_nll(model, tokenizer, rows)
    assert prompt_only > target_only + 0.5, (prompt_only, target_only)
    assert completion_nll(model, prompt_ids, prompt_mask, **batch, prompt_weight=0.0).item() == target_only
    assert (
        target_only + 0.1 < weighted < prompt_only
    )  # a weighted mean of the two, pulled toward the prompt's


def test_warmup_prompt_weight_teaches_the_prompt_the_target_only_warmup_does_not():
    from conftest import make_samples

    rows = make_samples(6, seed=2)
    tiny, options, tokenizer = _warmup_setup(rows)
    nll = {}
    for weight in (0.0, 0.5):
        torch.manual_seed(0)
        model = tiny.build_model(tokenizer, options)
        opts = options.model_copy(update={"warmup_steps": 30, "warmup_prompt_weight": weight})
        losses = tiny.format_warmup(model, tokenizer, rows, opts)
        assert len(losses) == 30
        nll[weight] = _prompt_nll(model.eval(), tokenizer, rows)
    assert nll[0.5] < nll[0.0] - 0.5, nll


def test_turn_weights_mark_the_expert_turns_of_the_history_only():
    from conftest import make_samples

    _, _, tokenizer = _warmup_setup(make_samples(4, seed=1))
    messages = [
        {"role": "system", "content": "you fix bugs"},
        {"role": "user", "content": "problem: test_a fails"},
        {"role": "assistant", "content": "```bash\nls\n```"},
        {"role": "user", "content": "OBSERVATION:\na.py"},
        {"role": "assistant", "content": "```bash\npytest -q test_a.py\n```"},
        {"role": "user", "content": "OBSERVATION:\n1 failed"},
    ]
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    ids = tokenizer(str(text), add_special_tokens=False)["input_ids"]
    weights = turn_weights(ids, tokenizer, 0.1, 1.0)
    marked = tokenizer.decode([t for t, w in zip(ids, weights, strict=True) if w == 1.0])
    assert marked == "```bash\nls\n```<|im_end|>```bash\npytest -q test_a.py\n```<|im_end|>"
    assert set(weights) == {0.1, 1.0} and weights[-3:] == [0.1] * 3  # the open generation prompt is no turn
    assert turn_weights(ids, tokenizer, 0.1, 0.1) == [0.1] * len(ids)


def test_warmup_history_weight_teaches_the_earlier_actions():
    """With the expert's earlier turns weighted as targets, the warm-up fits them better than with the prompt's
    light weight alone (same steps, same data, same seed). Only each trajectory's last step is trained on, so the
    earlier actions are no other sample's target."""
    from conftest import make_samples

    last: dict[str, dict] = {}
    for row in make_samples(8, seed=3):
        if row["step"] >= last.get(row["instance_id"], {"step": 0})["step"]:
            last[row["instance_id"]] = row
    rows = [r for r in last.values() if sum(m["role"] == "assistant" for m in r["prompt"]) >= 1]
    assert len(rows) >= 4
    tiny, options, tokenizer = _warmup_setup(rows)
    prompt_ids, prompt_mask = _prompts(tokenizer, rows)
    turns = torch.tensor([turn_weights(row, tokenizer, 0.0, 1.0) for row in prompt_ids.tolist()])
    assert turns.sum() > 0
    nll = {}
    for weight in (0.0, 1.0):
        torch.manual_seed(0)
        model = tiny.build_model(tokenizer, options)
        opts = options.model_copy(
            update={"warmup_steps": 30, "warmup_prompt_weight": 0.1, "warmup_history_weight": weight}
        )
        assert len(tiny.format_warmup(model, tokenizer, rows, opts)) == 30
        with torch.no_grad():
            logits = model.eval()(input_ids=prompt_ids, attention_mask=prompt_mask).logits[:, :-1].float()
        token_nll = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), prompt_ids[:, 1:].reshape(-1), reduction="none"
        ).view_as(prompt_ids[:, 1:])
        mask = turns[:, 1:] * prompt_mask[:, 1:]
        nll[weight] = ((token_nll * mask).sum() / mask.sum()).item()
    assert nll[1.0] < nll[0.0] - 0.1, nll
