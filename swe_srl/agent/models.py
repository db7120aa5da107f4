"""Model policies: a local HF causal LM, and a model behind an OpenAI-compatible server (``served.py``, re-exported
here) (see ``policies.Policy``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swe_srl.agent.served import MAX_CONCURRENT_REQUESTS, OpenAIPolicy, context_overflow  # noqa: F401 (re-exported)
from swe_srl.core.actions import THINK_OPEN
from swe_srl.core.view import PLAIN, PlainView
from swe_srl.errors import PolicyError

if TYPE_CHECKING:
    from swe_srl.benchmark.instances import Instance

Messages = list[dict[str, str]]


def adapter_base(model: str) -> str | None:
    """The base model a peft adapter directory names (``adapter_config.json``'s ``base_model_name_or_path``);
    None when ``model`` is not an adapter directory."""
    config = Path(model).expanduser() / "adapter_config.json"
    if not config.is_file():
        return None
    try:
        base = json.loads(config.read_text(encoding="utf-8")).get("base_model_name_or_path")
    except (OSError, ValueError) as exc:
        raise PolicyError(f"adapter {model!r}: unreadable {config.name}: {exc}") from None
    if not base:
        raise PolicyError(f"adapter {model!r}: {config.name} names no base_model_name_or_path")
    return str(base)


def model_device() -> str:
    """Where a local policy runs: ``cuda`` when a GPU is visible, else ``cpu``."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _has_tokenizer(model: str) -> bool:
    path = Path(model).expanduser()
    return not path.is_dir() or any((path / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json"))


def _apply_adapter(base_model: Any, adapter: str) -> Any:
    """The base model with the peft adapter merged in (inference only: plain ``generate`` afterwards)."""
    try:
        from peft import PeftModel
    except ImportError:
        raise PolicyError("a LoRA adapter policy needs peft: pip install 'swe-srl[train]'") from None
    try:
        return PeftModel.from_pretrained(base_model, adapter).merge_and_unload()
    except (OSError, ValueError, RuntimeError) as exc:
        raise PolicyError(f"cannot apply adapter {adapter!r}: {exc}") from None


def generate_ids(
    model: Any,
    tokenizer: Any,
    batch: Sequence[Sequence[int]],
    max_new_tokens: int,
    temperature: float = 0.0,
    synced_gpus: bool | None = None,
) -> list[list[int]]:
    """One ``generate`` call for several token contexts (left-padded): each context's new tokens, cut after its
    first end token (the padding a finished row gets while the others go on). Greedy unless ``temperature > 0``;
    a batch of one is the unpadded call."""
    import torch

    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    width = max(map(len, batch))
    ids = torch.tensor([[pad] * (width - len(b)) + list(b) for b in batch], device=model.device)
    mask = torch.tensor([[0] * (width - len(b)) + [1] * len(b) for b in batch], device=model.device)
    options: dict[str, Any] = {"do_sample": temperature > 0, "max_new_tokens": max_new_tokens}
    if synced_gpus is not None:  # False: whole weights on every process (train.sharding.full_weights)
        options["synced_gpus"] = synced_gpus
    if temperature > 0:
        options["temperature"] = temperature
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=mask, pad_token_id=pad, **options)
    ends = getattr(model.generation_config, "eos_token_id", None)
    ends = set(ends if isinstance(ends, list) else [ends] if ends is not None else [tokenizer.eos_token_id])
    turns = []
    for row in out[:, width:].tolist():
        cut = next((k + 1 for k, token in enumerate(row) if token in ends), len(row))
        turns.append(row[:cut])
    return turns


class HFPolicy:
    """A local causal LM (directory or hub id) prompted through its chat template, as in training. A peft (LoRA)
    adapter directory loads its base model (``adapter_config.json``) with the adapter merged in.

    Greedy decoding unless ``temperature > 0``; ``count_tokens`` lets the agent keep the prompt in the context.
    ``view_for(tokenizer)`` gives the policy's view (:class:`~swe_srl.core.view.PlainView` without it): what it reads
    for a conversation and what its output means (the tiny model's slots: the caller passes
    ``swe_srl.train.tiny.slots.view_of``).
    """

    def __init__(
        self,
        model: str,
        *,
        max_new_tokens: int = 1024,
        temperature: float = 0.0,
        view_for: Callable[[Any], PlainView] | None = None,
    ) -> None:
        try:
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError:
            raise PolicyError("policy 'hf:…' needs the train extra: pip install 'swe-srl[train]'") from None
        base = adapter_base(model)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model if _has_tokenizer(model) else base or model)
            self.model = AutoModelForCausalLM.from_pretrained(base or model, dtype="auto")
        except (OSError, ValueError) as exc:
            what = f"base model {base!r} of adapter {model!r}" if base else f"model {model!r}"
            raise PolicyError(f"cannot load {what} (a local directory or a hub id): {exc}") from None
        if base:
            self.model = _apply_adapter(self.model, model)
        if not getattr(self.tokenizer, "chat_template", None):
            raise PolicyError(
                f"model {model!r} has no chat template; save the tokenizer with the one used in training"
            )
        self.model.to(model_device())  # the GPU when there is one
        self.model.eval()
        self.view = view_for(self.tokenizer) if view_for is not None else PLAIN  # how it reads and writes
        self.name = f"hf:{model}"
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        positions = getattr(self.model.config, "max_position_embeddings", None)
        self.context_tokens: int | None = int(positions) if positions else None

    def reset(self, instance: Instance) -> None:
        pass

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False))

    def generate(self, messages: Messages) -> str:
        return self.generate_batch([messages])[0]

    def generate_batch(self, batch: Sequence[Messages]) -> list[str]:
        """One ``generate`` call for several conversations (left-padded), one output each."""
        tokenizer = self.tokenizer
        shown = [self.view.show(m) for m in batch]  # what the policy reads (the tiny model's: slots)
        prompts = [
            tokenizer.apply_chat_template(m, tokenize=False, add_generation_prompt=True) for m, _ in shown
        ]
        encoded = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
        turns = generate_ids(self.model, tokenizer, encoded, self.max_new_tokens, self.temperature)
        texts = tokenizer.batch_decode(turns, skip_special_tokens=True)
        texts = [self.view.read(t, key) for t, (_, key) in zip(texts, shown, strict=True)]  # as actions
        # Templates of reasoning models (and the tiny one) open <think> in the generation prompt: put it back.
        return [
            THINK_OPEN + t if p.rstrip().endswith(THINK_OPEN) else t
            for p, t in zip(prompts, texts, strict=True)
        ]
