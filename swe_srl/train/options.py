"""The sections of the training config (``dynamic_sampling``, ``loss``, ``lora``, ``eval``, ``tiny``, ``rlvr``):
typed, with defaults and one-line descriptions, unknown keys rejected by name. The whole run's config, presets and
overrides: :mod:`swe_srl.train.config`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from swe_srl.train.tiny.augment import SwapPool


class StrictOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class DynamicSampling(StrictOptions):
    """DAPO-style dynamic sampling: drop groups whose reward std ≤ epsilon and refill with other prompts."""

    enabled: bool = Field(True, description="Drop zero-variance groups (they carry no GRPO signal).")
    epsilon: float = Field(0.1, ge=0.0, description="A group is kept when its reward std is > epsilon.")
    max_rounds: int = Field(3, ge=1, description="Generation rounds per step (1 = drop only, no refill).")


class LossOptions(StrictOptions):
    """Terms added to TRL's GRPO loss (TRL's own: ``trl.entropy_coef``, ``trl.epsilon_high``, ``trl.loss_type``)."""

    sft_weight: float = Field(
        0.0,
        ge=0.0,
        description="λ of the auxiliary SFT term: NLL of the expert action given the prompt, added to each GRPO "
        "step against language drift (0 = off; typical 0.05-0.2). Logged as sft/loss.",
    )
    replay_weight: float = Field(
        0.0,
        ge=0.0,
        description="λ of the replay anchor: NLL of the expert action on train samples drawn uniformly each step, "
        "not only the batch's prompts (the late steps dynamic sampling drops; 0 = off). Logged as replay/loss.",
    )
    replay_batch: int = Field(4, ge=1, description="Train samples the replay anchor draws per step.")
    sft_thought: bool = Field(
        True,
        description="Condition the SFT targets (the SFT term, the replay anchor, --method sft) on the expert's "
        "thought. The tiny model's default is false: its warm-up and its greedy decoding have an empty thought.",
    )


class LoraOptions(StrictOptions):
    """LoRA adapters through peft (``--lora``)."""

    enabled: bool = Field(False, description="Train LoRA adapters instead of all weights.")
    r: int = Field(16, ge=1, description="Adapter rank.")
    alpha: int = Field(32, ge=1, description="LoRA alpha.")
    dropout: float = Field(0.05, ge=0.0, le=1.0, description="LoRA dropout.")
    target_modules: str | list[str] = Field("all-linear", description="Modules that get adapters.")


class EvalOptions(StrictOptions):
    """Periodic held-out evaluation: mean reward on test-split samples with greedy decoding."""

    every: int = Field(
        20,
        ge=0,
        description="Evaluate before training, every N optimizer steps and at the end (0 = end only).",
    )
    max_samples: int = Field(
        32, ge=0, description="Test samples per evaluation, spread over the split (0 disables evaluation)."
    )
    batch_size: int = Field(8, ge=1, description="Generation batch size for evaluation.")


class TinyOptions(StrictOptions):
    """The embedded default policy: a Qwen2-shaped model (random init + a short format warm-up) and a BPE tokenizer
    trained on the samples."""

    hidden_size: int = Field(128, ge=16, le=512, description="Hidden size.")
    mlp_ratio: float = Field(
        2.0,
        gt=0,
        le=8,
        description="MLP width over hidden_size (small: less room to memorise, attention does more).",
    )
    layers: int = Field(4, ge=1, le=8, description="Transformer layers.")
    heads: int = Field(4, ge=1, description="Attention heads.")
    vocab_size: int = Field(
        2048, ge=280, le=32000, description="BPE vocabulary size (trained on the train split's texts)."
    )
    seed: int = Field(0, description="Init seed.")
    max_prompt_tokens: int = Field(
        768,
        ge=32,
        description="The tiny model's context, fitted by the one prompt fitter (system prompt and problem kept).",
    )
    threads: int = Field(
        2,
        ge=1,
        description="CPU threads (torch) for the tiny model (2: this machine's cores; one per run when two runs "
        "share them).",
    )
    warmup_steps: int = Field(
        200,
        ge=0,
        description="Format warm-up: supervised steps on the train split's '</think>' + expert action before SRL "
        "(stands in for the instruction tuning a real base model has; 0 = SRL from random init).",
    )
    warmup_share: float = Field(
        0.5,
        gt=0.0,
        le=1.0,
        description="Share of the train instances whose steps the format warm-up uses; below 1 SRL (and --method "
        "sft) train on the other instances only, so the start has not seen them, as a real base model has not "
        "(swe_srl.train.tiny.start.warmup_split; 1 = both use every train sample; ignored with --model or --init).",
    )
    warmup_lr: float = Field(3e-3, gt=0, description="Learning rate of the format warm-up (AdamW).")
    warmup_batch: int = Field(8, ge=1, description="Samples per format warm-up step.")
    warmup_ramp: int = Field(
        20, ge=0, description="Warm-up steps over which the learning rate rises linearly (0: constant)."
    )
    warmup_target_tokens: int = Field(
        32, ge=1, description="Warm-up targets ('</think>' + action + EOS) are cut to this many tokens."
    )
    warmup_prompt_weight: float = Field(
        0.1,
        ge=0.0,
        description="Warm-up loss on the prompt's own tokens (problem, oracle windows, history), per token "
        "against a target token's 1; 0 = the target only.",
    )
    warmup_history_weight: float = Field(
        0.0,
        ge=0.0,
        description="Warm-up loss weight of the prompt's earlier assistant turns (the expert's previous actions, "
        "as in multi-turn SFT on every turn) instead of warmup_prompt_weight; 0 = no different from the prompt.",
    )
    warmup_renamed_copies: int = Field(
        0,
        ge=0,
        description="Warm-up data: this many copies of every train sample whose problem names a failing test, "
        "with those test names renamed everywhere in the sample (swe_srl.train.tiny.augment); 0 = none.",
    )
    warmup_swap: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="Share of the warm-up samples whose own library's names are swapped (as swap_library_names "
        "does for SRL: swe_srl.train.tiny.augment), the new names from warmup_swap_pool; 0 = none.",
    )
    warmup_swap_pool: SwapPool = Field(
        "train",
        description="Where warmup_swap draws the new names: train (other train libraries') or stdlib (the standard "
        "library's, as swap_pool).",
    )
    warmup_pool_copies: int = Field(
        0,
        ge=0,
        description="Warm-up data: this many copies of every train sample with its own library's names replaced "
        "by names drawn from the standard library (swe_srl.train.tiny.augment: pool_names); 0 = none.",
    )
    slots: bool = Field(
        True,
        description="Slotted names: the prompt's code names (.py paths, path words, test ids, defined names) "
        "become slot tokens <n0>, <n1>, ... the policy reads and writes, mapped back before scoring "
        "(swe_srl.train.tiny.slots).",
    )
    induction_steps: int = Field(
        0,
        ge=0,
        description="Induction steps before the warm-up: repeats of train-prompt windows, the loss on the repeat "
        "(the stand-in for a pretrained model's copying; swe_srl.train.tiny.induction); 0 = none.",
    )
    induction_every: int = Field(
        0,
        ge=0,
        description="One more induction step after every K warm-up steps (0 = none during the warm-up).",
    )


class RlvrOptions(StrictOptions):
    """SRL → RLVR (``--stage rlvr``): multi-turn episodes in ``SWEEnv`` with the outcome reward."""

    instances: int = Field(
        2,
        ge=1,
        description="Episodes come from the first N train instances of the task set (fewer than a generation "
        "batch's prompts repeat to fill it).",
    )
    max_turns: int = Field(
        3, ge=1, description="Model turns per episode (unsubmitted → unresolved, reward 0)."
    )
    max_new_tokens: int = Field(48, ge=1, description="Tokens the policy writes per turn.")
    command_timeout_s: float = Field(30.0, gt=0, description="Per-command timeout in the sandbox.")
    parallel: int = Field(
        4, ge=1, description="Episodes played at once (one env each; one batched generation per turn)."
    )
    eval_instances: int = Field(
        2, ge=0, description="Held-out resolve rate: greedy episodes on the first N test instances (0: none)."
    )
    shell: Literal["persistent", "per-action"] = Field(
        "persistent",
        description="How episodes run commands (core/shells.py): one persistent bash, or per-action (each command "
        "a fresh bash from /testbed, as mini-swe-agent runs them); the prompt says which.",
    )
