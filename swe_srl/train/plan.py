"""The pre-flight memory plan: what one training run needs per GPU, from the model's ``config.json`` alone.

``swe-srl train ... --dry-run --gpus N --gpu-memory GiB`` prints it; a real run on CUDA checks it before loading
weights. Nothing here loads weights, a tokenizer or data. Figures are GiB (2**30 bytes) per GPU.

Terms (``P`` parameters, ``L`` layers, ``H`` hidden, ``I`` intermediate, ``kvd`` = KV heads × head dim, ``T``
tokens per micro-batch = per-device batch × (``max_prompt_tokens`` + ``max_completion_length``), N GPUs, FSDP
full shard when N > 1):

- weights: full fine-tune keeps fp32 master weights, 4P / N, plus the bf16 working copy (2P under autocast on one
  GPU; two gathered FSDP units in bf16 on several). LoRA: the bf16 base, 2P / N (+ two gathered units when N > 1).
- gradients: fp32, 4P / N (LoRA: the adapters' only, fp32).
- optimizer states: AdamW's two fp32 moments, 8P / N (LoRA: the adapters').
- reference model: none at β 0; else a second copy of the policy's weights (LoRA: none, adapters off).
- activations: with gradient checkpointing, one bf16 hidden state per layer kept (2·L·H·T bytes) plus one layer
  recomputed with its backward (2 × 2·(4H + 2·kvd + 4I)·T bytes); without it, every layer's (L times that);
  plus the completion logits in fp32 with their softmax and gradient (12·V bytes per completion token).
- generation: HF ``generate`` over per-device batch × ``steps_per_generation`` rows: the KV cache
  (rows × (prompt + completion) × L × 2·kvd × 2 bytes) plus the prefill's MLP (3·I × 2 bytes per prompt token);
  with vLLM (colocated), its share of the card (``vllm_gpu_memory_utilization``), held for the whole run.

Peak = the resident terms (weights, gradients, optimizer states, reference model, vLLM's share) + the larger of
activations and HF generation (they happen at different times). It fits when the peak is at most the card's memory
less the headroom: 1.5 GiB for the CUDA context and library workspaces plus 5% of the card for fragmentation.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from huggingface_hub import hf_hub_download
from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError
from rich.table import Table

from swe_srl.errors import ConfigError
from swe_srl.train.config import start_of
from swe_srl.train.schema import TrainConfig

GIB = 2**30
CONTEXT_GIB = 1.5
FRAGMENTATION = 0.05
LORA_LINEAR = ("q", "k", "v", "o", "gate", "up", "down")


@dataclass(frozen=True)
class ModelShape:
    """The sizes of a decoder-only transformer (Qwen2 / Llama layout: GQA attention, gated MLP)."""

    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    vocab: int
    tied: bool

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    def linear_shapes(self) -> dict[str, tuple[int, int]]:
        """(in, out) of each linear layer in one decoder layer."""
        h, i, kv = self.hidden, self.intermediate, self.kv_dim
        shapes = {"q": (h, h), "k": (h, kv), "v": (h, kv), "o": (h, h)}
        return {**shapes, "gate": (h, i), "up": (h, i), "down": (i, h)}

    @property
    def layer_params(self) -> int:
        linear = sum(a * b for a, b in self.linear_shapes().values())
        return linear + self.hidden + 2 * self.kv_dim + 2 * self.hidden  # q/k/v biases, two norms

    @property
    def embed_params(self) -> int:
        return self.vocab * self.hidden

    @property
    def params(self) -> int:
        heads = 1 if self.tied else 2
        return self.layers * self.layer_params + heads * self.embed_params + self.hidden

    def lora_params(self, rank: int) -> int:
        return self.layers * sum(rank * (a + b) for a, b in self.linear_shapes().values())

    @classmethod
    def from_config(cls, data: dict[str, Any], source: str) -> ModelShape:
        text = data.get("text_config") if isinstance(data.get("text_config"), dict) else data
        keys = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
        missing = [k for k in keys if not isinstance(text.get(k), int)]
        if missing:
            raise ConfigError(f"{source}: no integer {missing[0]!r}; the plan needs {', '.join(keys)}")
        return cls(
            hidden=text["hidden_size"],
            intermediate=text["intermediate_size"],
            layers=text["num_hidden_layers"],
            heads=text["num_attention_heads"],
            kv_heads=int(text.get("num_key_value_heads") or text["num_attention_heads"]),
            vocab=text["vocab_size"],
            tied=bool(text.get("tie_word_embeddings", False)),
        )


def read_model_config(ref: str) -> tuple[dict[str, Any], str]:
    """(the model's config.json, where it was read): a local directory, else the Hub's config.json only."""
    path = Path(ref)
    if path.exists():
        file = path / "config.json" if path.is_dir() else path
    else:
        try:
            file = Path(hf_hub_download(ref, "config.json"))
        except (HfHubHTTPError, LocalEntryNotFoundError, OSError, ValueError) as exc:
            raise ConfigError(
                f"--model {ref}: cannot read its config.json from the Hub ({exc.__class__.__name__}); pass a "
                "local model directory, or check the network"
            ) from exc
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{file}: not a readable config.json ({exc})") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: config.json must be a mapping")
    return data, str(file)


@dataclass(frozen=True)
class Term:
    name: str
    gib: float
    key: str  # the config key to change when this term is the largest
    resident: bool = True  # held for the whole run (False: only while training or only while generating)


@dataclass(frozen=True)
class Plan:
    terms: list[Term]
    gpus: int
    gpu_memory_gib: float
    tokens_per_micro_batch: int
    tokens_per_step: int
    completions_per_step: int
    params: int

    @property
    def headroom_gib(self) -> float:
        return CONTEXT_GIB + FRAGMENTATION * self.gpu_memory_gib

    @property
    def usable_gib(self) -> float:
        return self.gpu_memory_gib - self.headroom_gib

    @property
    def peak_gib(self) -> float:
        resident = sum(t.gib for t in self.terms if t.resident)
        return resident + max((t.gib for t in self.terms if not t.resident), default=0.0)

    @property
    def fits(self) -> bool:
        return self.peak_gib <= self.usable_gib

    def verdict(self) -> str:
        """The last line of the plan: ``fits: …`` or ``does not fit: <largest term>; change <key>``."""
        if self.fits:
            return f"fits: {self.peak_gib:.1f} of {self.usable_gib:.1f} GiB usable per GPU"
        largest = max(self.terms, key=lambda t: t.gib)
        return f"does not fit: {largest.name} {largest.gib:.1f} GiB; change {largest.key}"


PLAN_KEYS = (
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "steps_per_generation",
    "max_completion_length",
    "beta",
    "gradient_checkpointing",
    "use_vllm",
    "vllm_gpu_memory_utilization",
)


def trl_options(config: TrainConfig) -> dict[str, Any]:
    """The TRL options the plan reads: the run's, else ``trl.GRPOConfig``'s own defaults."""
    from trl import GRPOConfig

    defaults = {f.name: f.default for f in dataclasses.fields(GRPOConfig) if f.name in PLAN_KEYS}
    return {**defaults, **{k: v for k, v in config.trl.items() if k in PLAN_KEYS}}


def _weights(shape: ModelShape, lora: bool, gpus: int) -> float:
    p = shape.params
    unit = max(shape.layer_params, shape.embed_params)
    gathered = 2 * unit * 2 if gpus > 1 else 0  # two bf16 FSDP units in flight
    if lora:
        return (2 * p / gpus + gathered) / GIB
    working = 2 * p if gpus == 1 else gathered  # bf16 copy of the fp32 master weights
    return (4 * p / gpus + working) / GIB


def _activations(shape: ModelShape, per_device: int, seq: int, completion: int, checkpointing: bool) -> float:
    tokens = per_device * seq
    layer = 2 * 2 * (4 * shape.hidden + 2 * shape.kv_dim + 4 * shape.intermediate) * tokens
    kept = 2 * shape.layers * shape.hidden * tokens if checkpointing else shape.layers * layer
    logits = 12 * shape.vocab * per_device * (completion + 1)
    return (kept + layer + logits) / GIB


def _generation(shape: ModelShape, rows: int, prompt: int, completion: int) -> float:
    kv = rows * (prompt + completion) * shape.layers * 2 * shape.kv_dim * 2
    prefill = rows * prompt * 3 * shape.intermediate * 2
    return (kv + prefill) / GIB


def make_plan(shape: ModelShape, config: TrainConfig, gpus: int, gpu_memory_gib: float) -> Plan:
    """The per-GPU memory plan of ``config`` on ``gpus`` cards of ``gpu_memory_gib`` GiB each."""
    if config.max_prompt_tokens is None:
        raise ConfigError(
            "the plan needs max_prompt_tokens (whole prompts have no bound): set max_prompt_tokens"
        )
    trl = trl_options(config)
    per_device, accum = int(trl["per_device_train_batch_size"]), int(trl["gradient_accumulation_steps"])
    completion, prompt = int(trl["max_completion_length"]), config.max_prompt_tokens
    lora = config.lora.enabled
    p = shape.lora_params(config.lora.r) if lora else shape.params
    shard = 1 if lora else gpus
    terms = [
        Term("weights", _weights(shape, lora, gpus), "--gpus (FSDP shards them) or lora.enabled"),
        Term("gradients", 4 * p / shard / GIB, "lora.enabled"),
        Term("optimizer states", 8 * p / shard / GIB, "lora.enabled"),
        Term(
            "reference model",
            0.0 if lora or not trl.get("beta") else 4 * shape.params / gpus / GIB,
            "trl.beta",
        ),
    ]
    checkpointing = bool(trl.get("gradient_checkpointing"))
    act = _activations(shape, per_device, prompt + completion, completion, checkpointing)
    terms.append(Term("activations", act, "trl.per_device_train_batch_size", resident=False))
    if trl.get("use_vllm"):
        share = float(trl.get("vllm_gpu_memory_utilization", 0.3)) * gpu_memory_gib
        terms.append(Term("vLLM share", share, "trl.vllm_gpu_memory_utilization"))
    else:
        rows = per_device * int(trl.get("steps_per_generation") or accum)
        gen = _generation(shape, rows, prompt, completion)
        terms.append(Term("generation KV cache", gen, "trl.steps_per_generation", resident=False))
    completions = per_device * accum * gpus
    return Plan(
        terms=terms,
        gpus=gpus,
        gpu_memory_gib=gpu_memory_gib,
        tokens_per_micro_batch=per_device * (prompt + completion),
        tokens_per_step=completions * (prompt + completion),
        completions_per_step=completions,
        params=shape.params,
    )


def render(plan: Plan, title: str):
    """The plan as a rich table (one row a term, then the totals)."""
    table = Table(title=title)
    table.add_column("per GPU")
    table.add_column("GiB", justify="right")
    table.add_column("when")
    for term in plan.terms:
        table.add_row(term.name, f"{term.gib:.1f}", "whole run" if term.resident else "peak phase")
    table.add_row("peak (resident + larger phase)", f"{plan.peak_gib:.1f}", "")
    table.add_row(
        f"headroom ({CONTEXT_GIB} GiB context + {FRAGMENTATION:.0%})", f"{plan.headroom_gib:.1f}", ""
    )
    table.add_row("card", f"{plan.gpu_memory_gib:.1f}", "")
    table.add_row("tokens per micro-batch", f"{plan.tokens_per_micro_batch:,}", "")
    table.add_row(
        "tokens per optimizer step", f"{plan.tokens_per_step:,}", f"{plan.completions_per_step:,} completions"
    )
    return table


def plan_for(config: TrainConfig, gpus: int, gpu_memory_gib: float) -> tuple[Plan, str]:
    """(the plan of ``config``'s model, a title naming the model and the cards)."""
    ref = config.init or config.model
    if not ref or start_of(config).name == "tiny":
        raise ConfigError(
            "the plan is for real models: pass --model M or --init CKPT (the tiny model needs none)"
        )
    if gpus < 1 or gpu_memory_gib <= 0:
        raise ConfigError(f"--gpus {gpus} --gpu-memory {gpu_memory_gib}: both must be positive")
    data, source = read_model_config(ref)
    shape = ModelShape.from_config(data, source)
    plan = make_plan(shape, config, gpus, gpu_memory_gib)
    mode = "LoRA" if config.lora.enabled else "full fine-tune"
    title = f"{ref} ({shape.params / 1e9:.2f}B, {mode}) on {gpus} × {gpu_memory_gib:g} GiB"
    return plan, title
