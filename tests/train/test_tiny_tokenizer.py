"""The tiny model's tokenizer: the warm-up tokenizes exactly as the saved model directory reloads."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from transformers import AutoTokenizer  # noqa: E402

from swe_srl.train.config import TinyOptions  # noqa: E402
from swe_srl.train.tiny.model import build_tokenizer, make_tiny_policy  # noqa: E402

TEXTS = [
    "Besides the usual tools, a file editor is available:\n  str_replace_editor view PATH\n",
    '<file path="calc.py">\n 10|     def add(a, b):\n 11|         return a + b\n</file>',
    "```bash\npython -m pytest -q tests/test_calc.py::test_add\n```\n\n\nOBSERVATION:\n  1 passed",
] * 20


def test_the_warmup_tokenizer_is_the_one_the_saved_model_reloads(tmp_path):
    """AutoTokenizer picks the model type's class (Qwen2Tokenizer) with its own whitespace splitting; a warm-up on
    the in-memory BPE would see other token sequences than GRPO and evaluation (``\\n  x`` split otherwise)."""
    built = build_tokenizer(TEXTS, 300)
    options = TinyOptions(hidden_size=32, layers=2, heads=2, vocab_size=300, warmup_steps=0)
    loaded = AutoTokenizer.from_pretrained(make_tiny_policy(TEXTS, tmp_path / "tiny", options))
    assert type(built) is type(loaded)
    for text in TEXTS[:3]:
        assert (
            built(text, add_special_tokens=False)["input_ids"]
            == loaded(text, add_special_tokens=False)["input_ids"]
        )
    assert len(built("<think>x</think>", add_special_tokens=False)["input_ids"]) == 3
