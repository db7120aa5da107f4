"""The embedded default policy: a random-init Qwen2-shaped causal LM and a byte-level BPE tokenizer trained
in-process on the training texts, saved so it reloads with ``AutoModelForCausalLM`` / ``AutoTokenizer``.

The chat template's generation prompt already opens ``<think>`` (as reasoning models' templates do), and the
vocabulary is small, so a random policy closes the think block and writes an action often enough to learn from.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from swe_srl.actions import THINK_CLOSE, THINK_OPEN
from swe_srl.train.config import TinyOptions

EOS, PAD, IM_START = "<|im_end|>", "<|endoftext|>", "<|im_start|>"
CHAT_TEMPLATE = (
    "{%- for m in messages %}"
    "{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n<think>' }}{%- endif %}"
)


def build_tokenizer(texts: Iterable[str], vocab_size: int):
    """Train a byte-level BPE on ``texts``; ``<think>``/``</think>`` are single (non-special) tokens."""
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
    fast.add_tokens([THINK_OPEN, THINK_CLOSE])
    fast.chat_template = CHAT_TEMPLATE
    fast.padding_side = "left"
    return fast


def build_model(tokenizer, options: TinyOptions):
    """A random-init ``Qwen2ForCausalLM`` sized for CPU training."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=options.hidden_size,
        intermediate_size=options.hidden_size * 2,
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


def make_tiny_policy(texts: Iterable[str], directory: Path, options: TinyOptions | None = None) -> Path:
    """Build (or reuse, when already saved) the tiny model + tokenizer in ``directory``; returns the path."""
    options = options or TinyOptions()
    if (directory / "config.json").exists() and (directory / "tokenizer.json").exists():
        return directory
    tokenizer = build_tokenizer(texts, options.vocab_size)
    model = build_model(tokenizer, options)
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(directory)
    model.save_pretrained(directory)
    return directory


def sample_texts(rows: Iterable[dict]) -> Iterable[str]:
    """Every message and action text of the samples, to train the tokenizer on."""
    for row in rows:
        for message in row["prompt"]:
            yield message["content"]
        yield row["expert_action"]
        yield row.get("expert_thought", "")
