"""The training config's schema: :class:`TrainConfig`, one run, with its sections (:mod:`swe_srl.train.options`).

Loading (presets, YAML, flags, ``--set``): :mod:`swe_srl.train.config`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from swe_srl.benchmark.instances import HELD_OUT
from swe_srl.infra.sandbox.placement import parse_sandboxes
from swe_srl.rewards.effect.protocol import EffectMode
from swe_srl.train.options import (
    DynamicSampling,
    EvalOptions,
    LoraOptions,
    LossOptions,
    RlvrOptions,
    StrictOptions,
    TinyOptions,
)
from swe_srl.train.tiny.augment import SwapPool

__all__ = ["TrainConfig"]


class TrainConfig(StrictOptions):
    """One training run. ``trl`` holds the GRPOConfig options the run passes (TRL's own defaults for the rest)."""

    preset: str | None = Field(
        None,
        description="Starting config (swe_srl.train.presets); None: the start's own (cpu-tiny or paper).",
    )
    stage: Literal["srl", "rlvr"] = Field("srl", description="SRL on step samples, or RLVR episodes.")
    method: Literal["srl", "sft"] = Field(
        "srl", description="SRL (GRPO on step rewards), or the SFT baseline on the same expert actions."
    )
    init: str | None = Field(None, description="Checkpoint to start from (required for --stage rlvr).")
    model: str = Field(
        "tiny",
        description="tiny (the embedded CPU demo model, built in-process: swe_srl.train.tiny), or an HF id or path.",
    )
    samples: str | None = Field(None, description="Step samples JSONL (from `swe-srl decompose`).")
    trajectories: list[str] = Field(
        default_factory=list, description="Trajectory files / HF ids to decompose."
    )
    tasks: str | None = Field(None, description="Task set (for oracle files and RLVR episodes).")
    repos_dir: str | None = Field(
        None,
        description="Folder of local clones or mirrors (offline; layouts: swe_srl.benchmark.repos.repo_source): "
        "every place that reads a task's repository takes it from here instead of the repos cache or GitHub — the "
        "samples' oracle files, the images of the effect layer and of the syntax layer's expert states, and RLVR "
        "episodes (their images, oracle files and grading). A folder that does not exist is refused by name.",
    )
    oracle_files: bool = Field(False, description="Prompts include the oracle files (paths + contents).")
    expert_seeds: int = Field(
        4,
        ge=1,
        description="Bundled suite only: scripted-expert runs per train task (seeds 0..N-1; each picks other "
        "commands for the same problem). Dev and test keep one.",
    )
    swap_library_names: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="Share of the SRL training samples whose own library's names (paths, modules, symbols, tests "
        "its expert actions write and no other train library's do) are swapped for other names (swap_pool) "
        "everywhere but the system prompt (swe_srl.train.tiny.augment), so that a recalled name is wrong and only one "
        "read from the prompt is right; the warm-up and the baselines keep the samples as they are (--method sft "
        "trains on the swapped rows only when this is set). 0 = none; the cpu-tiny preset's SRL value is 1.",
    )
    swap_pool: SwapPool = Field(
        "stdlib",
        description="Where swap_library_names draws the new names: stdlib (names the standard library defines: an "
        "open set, swe_srl.train.tiny.augment.pool_names; the default, chosen on dev) or train (other train libraries').",
    )
    reward: Literal["srl", "layered", "mixed"] = Field(
        "layered",
        description="Paper similarity, layered reward, or their weighted mean (mixed: reward_mix). The presets "
        "choose: cpu-tiny mixed, paper srl.",
    )
    reward_mix: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="--reward mixed: the paper similarity's share (mix·similarity + (1 − mix)·layered).",
    )
    wise_ft: float = Field(
        1.0,
        gt=0.0,
        le=1.0,
        description="WiSE-FT (swe_srl.train.wise): final/ holds (1 − wise_ft)·start + wise_ft·trained weights; 1 = "
        "the trained weights (the default; what a mix did on dev and test: docs/experiments.md, WiSE-FT). SRL "
        "without LoRA only.",
    )
    effect: EffectMode = Field("off", description="Effect layer of the layered reward.")
    sandboxes: str | None = Field(
        None,
        description="Where the effect layer's and RLVR episodes' sandboxes run: local (this machine's engine) or "
        "ray[:ADDRESS] (Ray actors on sandbox nodes, `swe-srl worker`; docs/cluster.md). None: $SWE_SRL_SANDBOXES, "
        "else local.",
    )
    fuzzy: bool = Field(False, description="Fuzzy normalization in the semantic layer.")
    advantage: Literal["grpo", "rloo"] = Field(
        "grpo", description="Group mean/std, or leave-one-out baseline."
    )
    dynamic_sampling: DynamicSampling = Field(default_factory=DynamicSampling)
    loss: LossOptions = Field(default_factory=LossOptions)
    lora: LoraOptions = Field(default_factory=LoraOptions)
    eval: EvalOptions = Field(default_factory=EvalOptions)
    tiny: TinyOptions = Field(default_factory=TinyOptions)
    rlvr: RlvrOptions = Field(default_factory=RlvrOptions)
    fast_generation: bool = Field(
        True, description="On CUDA: static KV cache + compiled decoding for rollouts."
    )
    shared_prompts: bool = Field(
        True,
        description="One process: run each group's prompt once per forward and generation, its KV cache shared by "
        "the group's completions (the same numbers, up to float rounding).",
    )
    max_prompt_tokens: int | None = Field(
        None,
        ge=32,
        description="Real models: cut longer prompts to their last N tokens, whole latest messages first "
        "(None = whole prompts). The tiny model uses tiny.max_prompt_tokens.",
    )
    heldout_split: Literal["test", "dev"] = Field(
        "test",
        description="The split the held-out report decodes and scores: test (the report), or dev (choosing defaults).",
    )
    test_fraction: float = Field(
        HELD_OUT, ge=0.0, lt=1.0, description="Held-out share when samples carry no split (the split rule)."
    )
    seed: int = Field(0, description="Data split / sampling seed.")
    output: str = Field("runs/srl", description="Output directory (checkpoints, metrics, plot, summary).")
    resume: bool = Field(False, description="Resume from the last checkpoint in the output directory.")
    allow_eval_instances: bool = Field(
        False,
        description="Train on SWE-bench evaluation instances (Verified/Lite/test) anyway: refused by default.",
    )
    trl: dict[str, Any] = Field(default_factory=dict, description="GRPOConfig options, passed through.")

    @field_validator("sandboxes")
    @classmethod
    def _placement(cls, value: str | None) -> str | None:
        parse_sandboxes(value, where="sandboxes")
        return value

    @field_validator("repos_dir")
    @classmethod
    def _existing_folder(cls, value: str | None) -> str | None:
        if value is not None and not Path(value).expanduser().is_dir():
            raise ValueError(f"{value!r} is no folder (give the folder that holds the local clones)")
        return value

    @property
    def output_dir(self) -> Path:
        return Path(self.output)

    @property
    def repos_path(self) -> Path | None:
        """``repos_dir`` as a path (None: the repos cache, else GitHub)."""
        return Path(self.repos_dir).expanduser() if self.repos_dir else None
