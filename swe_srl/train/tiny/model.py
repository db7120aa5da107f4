"""The embedded default policy: a Qwen2-shaped causal LM and a byte-level BPE tokenizer trained in-process on the
training texts, saved so it reloads with ``AutoModelForCausalLM`` / ``AutoTokenizer``.

The chat template's generation prompt already opens ``<think>`` (as reasoning models' templates do). A real SRL run
starts from an instruction-tuned model that already answers in the format; the tiny model gets a stand-in from a
supervised *warm-up* instead: ``tiny.warmup_steps`` steps on the train split's ``</think>`` + expert action (an empty
thought; targets cut at ``tiny.warmup_target_tokens``; the rate ramps up over ``tiny.warmup_ramp`` steps), plus a
lighter next-token loss on the prompt's own tokens (``tiny.warmup_prompt_weight``), the stand-in for pretraining
that teaches it to read the prompt, and the expert's earlier actions in the prompt at ``tiny.warmup_history_weight``
(multi-turn SFT: every turn of the history is a target too), optionally on renamed copies of the samples
(``tiny.warmup_renamed_copies``) or with library names swapped (``tiny.warmup_swap``; both
:mod:`swe_srl.train.tiny.augment`) and after and between induction steps (repeated spans: ``tiny.induction_steps``,
``tiny.induction_every``, :mod:`swe_srl.train.tiny.induction`). Without a warm-up
(``tiny.warmup_steps=0``) SRL from random init still raises the sampled reward, but greedy decoding stays degenerate
(it repeats ``</think>``), so the held-out greedy evaluation would sit at −1.
"""

from __future__ import annotations

import json
import random
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from rich.console import Console
from rich.progress import Progress, TextColumn

from swe_srl.core.actions import THINK_CLOSE, THINK_OPEN
from swe_srl.paths import atomic_write_text
from swe_srl.train.fitting import fit_rows
from swe_srl.train.options import TinyOptions
from swe_srl.train.sft import completion_nll, pad_left, sft_target, target_batch
from swe_srl.train.tiny.augment import pooled_copies, renamed_copies, swapped_libraries
from swe_srl.train.tiny.induction import RepeatedSpans
from swe_srl.train.tiny.slots import TOKENS, policy_action, slotted, view_of

EOS, PAD, IM_START = "<|im_end|>", "<|endoftext|>", "<|im_start|>"
CHAT_TEMPLATE = (
    "{%- for m in messages %}"
    "{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n<think>' }}{%- endif %}"
)


def build_tokenizer(texts: Iterable[str], vocab_size: int, slots: bool = False):
    """Train a byte-level BPE on ``texts``; ``<think>``/``</think>`` are single (non-special) tokens, and so are the
    slot tokens ``<n0>`` … with ``slots`` (:mod:`swe_srl.train.tiny.slots`).

    Returned as ``AutoTokenizer`` loads it from a Qwen2 model directory (:func:`as_saved`), so that the warm-up
    tokenizes exactly as the trainer, the evaluation and every later user of the saved model do."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[PAD, IM_START, EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, pad_token=PAD, bos_token=None)
    fast.add_tokens([THINK_OPEN, THINK_CLOSE, *(TOKENS if slots else ())])
    fast.chat_template = CHAT_TEMPLATE
    fast.padding_side = "left"
    return as_saved(fast)


def as_saved(tokenizer):
    """``tokenizer`` as ``AutoTokenizer`` reloads it beside a Qwen2 config: that picks the model type's tokenizer
    class (``Qwen2Tokenizer``), whose pre-tokenizer splits whitespace other than the byte-level one the BPE was built
    with (``"\\n  x"``: ``Ċ``, ``Ġ``, ``Ġx`` instead of ``ĊĠ``, ``Ġx``). A warm-up on the in-memory tokenizer would
    teach the model token sequences it never sees again."""
    from transformers import AutoTokenizer, Qwen2Config

    with tempfile.TemporaryDirectory(prefix="swe-srl-tokenizer-") as tmp:
        tokenizer.save_pretrained(tmp)
        Qwen2Config(vocab_size=len(tokenizer)).save_pretrained(tmp)
        loaded = AutoTokenizer.from_pretrained(tmp)
    loaded.padding_side = "left"
    return loaded


def build_model(tokenizer, options: TinyOptions):
    """A random-init ``Qwen2ForCausalLM`` sized for CPU training."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=options.hidden_size,
        intermediate_size=max(1, round(options.hidden_size * options.mlp_ratio)),
        num_hidden_layers=options.layers,
        num_attention_heads=options.heads,
        num_key_value_heads=max(1, options.heads // 2),
        max_position_embeddings=16384,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(options.seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def turn_weights(ids: list[int], tokenizer, base: float, turn: float) -> list[float]:
    """One weight per prompt token: ``turn`` for the content of every closed assistant turn (the expert's earlier
    actions, through its end-of-turn token), ``base`` elsewhere. Turns are found by :data:`CHAT_TEMPLATE`'s own markers
    (``IM_START assistant\\n`` … ``EOS``); the open generation prompt at the end is no turn."""
    start, end = (tokenizer.convert_tokens_to_ids(t) for t in (IM_START, EOS))
    role = tokenizer("assistant\n", add_special_tokens=False)["input_ids"]
    weights, opened = [base] * len(ids), None
    for j, token in enumerate(ids):
        if token == start and ids[j + 1 : j + 1 + len(role)] == role:
            opened = j + 1 + len(role)
        elif token == end and opened is not None:
            weights[opened : j + 1] = [turn] * (j + 1 - opened)
            opened = None
        elif token == start:
            opened = None
    return weights


def warmup_examples(rows: list[dict], tokenizer, max_prompt_tokens: int, max_completion_tokens: int):
    """(prompt ids, SFT target) per row: the fitted chat prompt, then ``</think>`` + the expert action + EOS (an
    empty thought: :func:`swe_srl.train.sft.sft_target`)."""

    examples = []
    for row in fit_rows(rows, max_prompt_tokens, tokenizer):
        text = tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True, tokenize=False)
        prompt = tokenizer(str(text), add_special_tokens=False)["input_ids"]
        target = sft_target(tokenizer, policy_action(row), max_tokens=max_completion_tokens)
        examples.append((prompt, target))
    return examples


def warmup_rows(rows: list[dict], options: TinyOptions) -> list[dict]:
    """The warm-up's samples: ``rows`` with the renamed copies, the swapped share (new names from
    ``warmup_swap_pool``) and the standard-library copies the options ask for (:mod:`swe_srl.train.tiny.augment`)."""
    rows = renamed_copies(rows, options.warmup_renamed_copies, seed=options.seed)
    rows = swapped_libraries(rows, options.warmup_swap, seed=options.seed, pool=options.warmup_swap_pool)
    return pooled_copies(rows, options.warmup_pool_copies, seed=options.seed)


def format_warmup(
    model,
    tokenizer,
    rows: list[dict],
    options: TinyOptions,
    *,
    lr_factor: Callable[[int], float] | None = None,
    on_step: Callable[[int, float], None] | None = None,
) -> list[float]:
    """``options.warmup_steps`` AdamW steps of the SFT loss (:func:`~swe_srl.train.sft.completion_nll`) on the
    targets, and on the prompts at ``options.warmup_prompt_weight``; returns the loss per step.

    ``lr_factor(step)`` replaces the rate's linear ramp (``warmup_ramp``); ``on_step(step, loss)`` is called after
    each step (1-based; a probe may decode there, leaving the model in training mode). ``options.induction_steps``
    induction steps come first and ``options.induction_every`` adds one after every K warm-up steps
    (:class:`~swe_srl.train.tiny.induction.RepeatedSpans` over the warm-up prompts, at the warm-up's rate)."""

    import torch

    rows = view_of(tokenizer).rows(warmup_rows(rows, options))  # slotted for a slotted tokenizer
    examples = warmup_examples(rows, tokenizer, options.max_prompt_tokens, options.warmup_target_tokens)
    if not examples:
        return []
    optimizer = torch.optim.AdamW(model.parameters(), lr=options.warmup_lr)
    ramp = max(1, options.warmup_ramp)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lr_factor or (lambda step: min(1.0, (step + 1) / ramp))
    )
    rng, pad, losses = random.Random(options.seed), tokenizer.pad_token_id, []
    every, copier = options.induction_every, None
    if options.induction_steps or every:
        copier = RepeatedSpans(model, pad, [p for p, _ in examples], options.seed, options.warmup_lr)
        for _ in range(options.induction_steps):
            copier.step()
    base, turn = options.warmup_prompt_weight, options.warmup_history_weight
    weighted = [turn_weights(p, tokenizer, base, turn) if turn else None for p, _ in examples]
    model.train()
    for step in range(1, options.warmup_steps + 1):
        chosen = rng.sample(range(len(examples)), min(options.warmup_batch, len(examples)))
        batch = [examples[i] for i in chosen]
        prompts = pad_left([p for p, _ in batch], pad)
        prompt_mask = pad_left([[1] * len(p) for p, _ in batch], 0)
        targets = target_batch([t for _, t in batch], pad)
        weight = pad_left([weighted[i] for i in chosen], 0.0, "float") if turn else base
        loss = completion_nll(
            model,
            prompts,
            prompt_mask,
            targets["target_ids"],
            targets["target_mask"],
            targets["loss_mask"],
            prompt_weight=weight,
        )
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        losses.append(loss.item())
        if copier is not None and every and step % every == 0:
            copier.step()
        if on_step is not None:
            on_step(step, losses[-1])
    model.eval()
    return losses


def make_tiny_policy(
    texts: Iterable[str],
    directory: Path,
    options: TinyOptions | None = None,
    warmup_rows: list[dict] | None = None,
) -> Path:
    """Build (or reuse, when already saved) the tiny model + tokenizer in ``directory``; returns the path.

    With ``warmup_rows`` (step samples) the model gets the format warm-up before it is saved; its losses go to
    ``warmup.json``. The directory appears whole or not at all (built beside it, then renamed).
    """

    options = options or TinyOptions()
    if (directory / "config.json").exists() and (directory / "tokenizer.json").exists():
        return directory
    tokenizer = build_tokenizer(texts, options.vocab_size, options.slots)
    model = build_model(tokenizer, options)
    losses: list[float] = []
    if warmup_rows and options.warmup_steps:
        with Progress(
            *Progress.get_default_columns(),
            TextColumn("loss {task.fields[loss]}"),
            console=Console(stderr=True),
        ) as bar:
            task = bar.add_task("format warm-up", total=options.warmup_steps, loss="…")
            losses = format_warmup(
                model, tokenizer, warmup_rows, options,
                on_step=lambda _step, loss: bar.update(task, advance=1, loss=f"{loss:.3f}"),
            )  # fmt: skip
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}-", dir=directory.parent))
    try:
        tokenizer.save_pretrained(staging)
        model.save_pretrained(staging)
        if losses:
            record = {
                "steps": len(losses),
                "loss_first": losses[0],
                "loss_last": losses[-1],
                "losses": losses,
            }
            atomic_write_text(staging / "warmup.json", json.dumps(record) + "\n")
        shutil.rmtree(directory, ignore_errors=True)
        staging.rename(directory)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return directory


def sample_texts(rows: Iterable[dict], slots: bool = False) -> Iterable[str]:
    """Every message and action text of the samples as the policy reads and writes them (``slots``: slotted,
    :mod:`swe_srl.train.tiny.slots`), to train the tokenizer on."""
    for row in map(slotted, rows) if slots else rows:
        for message in row["prompt"]:
            yield message["content"]
        yield policy_action(row)
        yield row.get("expert_thought", "")


def is_tiny_checkpoint(path: str | Path) -> bool:
    """Whether ``path`` holds the tiny model or a checkpoint trained from it: its saved tokenizer carries
    :data:`CHAT_TEMPLATE` (every save of the tokenizer keeps it: ``final/``, ``checkpoint-N/``, ``tiny-model/``)."""
    directory = Path(path)
    template = directory / "chat_template.jinja"
    if template.is_file():
        return template.read_text(encoding="utf-8") == CHAT_TEMPLATE
    config = directory / "tokenizer_config.json"
    try:
        saved = json.loads(config.read_text(encoding="utf-8")).get("chat_template")
    except (OSError, ValueError, AttributeError):
        return False
    return saved == CHAT_TEMPLATE
