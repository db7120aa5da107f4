"""Induction steps (swe_srl.train.tiny.induction): repeated windows of the prompts, the loss on the repeat only."""

from __future__ import annotations

from swe_srl.train.tiny.induction import RepeatedSpans
from tests.train.test_augment import _row


def _contains(seq: list[int], part: list[int]) -> bool:
    return any(seq[i : i + len(part)] == part for i in range(len(seq) - len(part) + 1))


def test_a_batch_repeats_a_window_and_masks_only_the_repeat_after_its_first_token():
    prompts = [
        list(range(1000 * k, 1000 * k + 400)) for k in range(1, 6)
    ]  # every token tells where it came from
    spans = RepeatedSpans(None, 0, prompts, seed=3)
    seqs, masks = spans.batch(64)
    for seq, mask in zip(seqs, masks, strict=True):
        assert len(mask) == len(seq)
        n = sum(mask) + 1  # the repeat: its first token is unmasked
        assert n >= 8 and mask[-(n - 1) :] == [1] * (n - 1) and sum(mask[: len(seq) - n + 1]) == 0
        window = seq[-n:]
        assert _contains(seq[:-n], window)  # it was seen before
        assert window == list(range(window[0], window[0] + n))  # one contiguous prompt window
    assert len({len(s) for s in seqs}) > 10  # window, before and between lengths vary
    assert spans.batch(64) != (seqs, masks)  # fresh sequences each call


def test_warmup_induction_steps_train_the_repeats():
    """``tiny.induction_steps`` / ``induction_every`` run inside ``format_warmup``: from the same init and the same
    warm-up steps, repeats of fresh prompt windows are predicted better than after the warm-up alone."""
    import torch

    from swe_srl.train.config import TinyOptions
    from swe_srl.train.tiny import model as tiny

    rows = [_row(name) for name in ("test_get", "test_merge_sorted", "test_curry_call", "test_pluck")]
    options = TinyOptions(
        hidden_size=32, layers=2, heads=2, vocab_size=300, max_prompt_tokens=256, seed=5, warmup_steps=20
    )
    tokenizer = tiny.build_tokenizer(tiny.sample_texts(rows), options.vocab_size)
    prompts = [p for p, _ in tiny.warmup_examples(rows, tokenizer, 256, options.warmup_target_tokens)]
    loss = {}
    for steps, every in ((0, 0), (60, 2)):
        model = tiny.build_model(tokenizer, options)
        opts = options.model_copy(update={"induction_steps": steps, "induction_every": every})
        assert len(tiny.format_warmup(model, tokenizer, rows, opts)) == 20
        gauge = RepeatedSpans(model.eval(), tokenizer.pad_token_id, prompts, seed=99)
        with torch.no_grad():
            loss[steps] = gauge.loss(32)[0].item()
    assert loss[60] < loss[0] - 0.5, loss
