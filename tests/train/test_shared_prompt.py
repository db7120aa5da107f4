"""Shared prompts (swe_srl/train/shared_prompt.py): each group's prompt runs once, and log-probabilities, entropies,
gradients and sampled completions are those of the full forward and of plain ``generate``."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from test_trl_options import SpreadReward, _inputs, _trainer  # noqa: E402
from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM  # noqa: E402
from trl.trainer.utils import add_fused_lm_head  # noqa: E402

from swe_srl.train.shared_prompt import (  # noqa: E402
    prompt_groups,
    share_generation_prefill,
    shared_prompt_logps,
)

pytestmark = pytest.mark.train

G, PROMPT, COMPLETION = 4, 48, 8
PADS = [0, 11, 3]


def _model(seed: int = 0) -> Qwen2ForCausalLM:
    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=300, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=256, pad_token_id=0, eos_token_id=2, bos_token_id=1,
    )  # fmt: skip
    return Qwen2ForCausalLM(config)


def _batch(seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """G rows per prompt, left-padded prompts of three lengths, completions with a padded tail on one row."""
    gen = torch.Generator().manual_seed(seed)
    prompts = torch.randint(3, 300, (len(PADS), PROMPT), generator=gen)
    prompt_mask = torch.ones_like(prompts)
    for row, pad in enumerate(PADS):
        prompts[row, :pad], prompt_mask[row, :pad] = 0, 0
    n = len(PADS) * G
    completions = torch.randint(3, 300, (n, COMPLETION), generator=gen)
    completion_mask = torch.ones_like(completions)
    completions[5, -3:], completion_mask[5, -3:] = 0, 0
    ids = torch.cat([prompts.repeat_interleave(G, 0), completions], 1)
    return ids, torch.cat([prompt_mask.repeat_interleave(G, 0), completion_mask], 1)


def _full(model, ids, mask):
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, :-COMPLETION] = -100
    out = model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
    return out.log_probs[:, -COMPLETION:], out.entropy[:, -COMPLETION:]


def _shared(model, ids, mask):
    groups = prompt_groups(ids[:, :-COMPLETION], mask[:, :-COMPLETION])
    return shared_prompt_logps(model, ids, mask, COMPLETION, groups)


def test_prompt_groups_find_repeated_prompts_only():
    ids, mask = _batch()
    first, inverse = prompt_groups(ids[:, :PROMPT], mask[:, :PROMPT])
    assert first.numel() == len(PADS)
    assert torch.equal(ids[first[inverse], :PROMPT], ids[:, :PROMPT])
    assert sorted(first.tolist()) == [0, G, 2 * G]  # the first row of each group
    assert prompt_groups(ids[::G, :PROMPT], mask[::G, :PROMPT]) is None
    other = mask[:, :PROMPT].clone()
    other[1, 0] = 0  # same ids, another mask: another prompt
    assert prompt_groups(ids[:, :PROMPT], other)[0].numel() == len(PADS) + 1


@pytest.mark.parametrize("lora", [False, True])
def test_shared_forward_equals_the_full_forward(lora: bool):
    model = _model()
    add_fused_lm_head(model, outputs=("log_probs", "entropy"))
    if lora:
        peft = pytest.importorskip("peft")
        model = peft.get_peft_model(
            model, peft.LoraConfig(r=4, target_modules="all-linear", init_lora_weights=False)
        )
    ids, mask = _batch()
    keep = mask[:, -COMPLETION:].bool()
    grads = []
    for forward in (_full, _shared):
        model.zero_grad()
        logps, entropy = forward(model, ids, mask)
        assert logps.shape == entropy.shape == (ids.size(0), COMPLETION)
        (logps * keep).sum().backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
        if forward is _full:
            expected = logps.detach(), entropy.detach()
    torch.testing.assert_close(logps.detach()[keep], expected[0][keep], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(entropy.detach()[keep], expected[1][keep], atol=1e-5, rtol=1e-5)
    assert grads[0].keys() == grads[1].keys() and grads[0]
    for name, grad in grads[0].items():
        torch.testing.assert_close(grads[1][name], grad, atol=1e-5, rtol=1e-4, msg=name)


def test_shared_generation_samples_what_generate_samples():
    ids, mask = _batch()
    ids, mask = ids[:, :PROMPT], mask[:, :PROMPT]
    config = GenerationConfig(
        max_new_tokens=10, do_sample=True, temperature=1.0, top_k=0, top_p=1.0, pad_token_id=0, eos_token_id=2
    )
    plain, shared = _model(), _model()
    share_generation_prefill(shared)
    share_generation_prefill(shared)  # idempotent
    assert getattr(shared.generate, "_shared_prefill", False)
    assert copy.deepcopy(shared).generate.__self__ is not shared  # a copy generates from its own weights
    seen: list[int] = []
    shared.model.embed_tokens.register_forward_hook(lambda _m, args, _o: seen.append(args[0].numel()))
    outputs = []
    for model in (plain, shared):
        torch.manual_seed(7)
        with torch.no_grad():
            outputs.append(model.generate(input_ids=ids, attention_mask=mask, generation_config=config))
    assert outputs[0].shape == outputs[1].shape == (ids.size(0), PROMPT + 10)
    assert torch.equal(outputs[0], outputs[1])
    assert seen[0] == len(PADS) * (PROMPT - 1)  # the prefill: each distinct prompt once
    assert max(seen[1:]) == ids.size(0)  # then one token per row


def test_trainer_forwards_share_prompts_and_match_trl(samples_file: Path, tmp_path: Path):
    trainer = _trainer(samples_file, tmp_path / "run", [], SpreadReward())
    assert trainer.shared_prompts
    torch.manual_seed(0)
    batch = trainer.generate_and_score(_inputs(trainer, "a", "b"))
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], 1)
    width = batch["completion_ids"].size(1)
    tokens: list[int] = []
    embed = trainer.model.get_input_embeddings()
    hook = embed.register_forward_hook(lambda _m, args, _o: tokens.append(args[0].numel()))
    results = []
    for shared in (True, False):
        trainer.shared_prompts = shared
        tokens.clear()
        logps, entropy, _ = trainer._get_per_token_logps_and_entropies(
            trainer.model, ids, mask, width, compute_entropy=True
        )
        results.append((logps.detach(), entropy.detach(), sum(tokens)))
    hook.remove()
    keep = batch["completion_mask"].bool()
    torch.testing.assert_close(results[0][0][keep], results[1][0][keep], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(results[0][1][keep], results[1][1][keep], atol=1e-5, rtol=1e-5)
    prompt = batch["prompt_ids"].size(1)
    assert results[1][2] == ids.numel()  # TRL's forward: every row's prompt
    assert results[0][2] == 2 * (prompt - 1) + ids.size(0) * (width + 1)  # two prompts once, then the rows


def test_shared_prompts_false_keeps_trls_forward_and_generate(samples_file: Path, tmp_path: Path):
    trainer = _trainer(samples_file, tmp_path / "run", ["shared_prompts=false"], SpreadReward())
    assert not trainer.shared_prompts and not getattr(trainer.model.generate, "_shared_prefill", False)
