"""SRL → RLVR: multi-turn episodes in the environment with the outcome reward, fed to GRPO through TRL's
``rollout_func`` hook (``GRPOTrainer(rollout_func=...)``, TRL ≥ 1.x, experimental there).

An ``EpisodeRunner`` plays one episode with a ``generate`` function (prompt token ids → one model turn's token
ids) and returns the transcript as token ids with a mask (1 = model tokens, 0 = environment observation tokens,
TRL's ``env_mask``) and the outcome reward (1 resolved, 0 not, None on infra failure → no gradient).
The env-backed runner (``swe_srl.env``) is not wired in yet: ``run_rlvr`` says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from swe_srl.errors import TrainingError

GenerateFn = Callable[[list[int]], list[int]]


@dataclass
class EpisodeResult:
    """One finished episode, as token ids of the whole transcript after the initial prompt."""

    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]
    reward: float | None
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.env_mask) != len(self.completion_ids):
            raise TrainingError(
                f"episode env_mask has {len(self.env_mask)} entries for {len(self.completion_ids)} tokens"
            )


class EpisodeRunner(Protocol):
    """Runs one episode for a dataset row (``prompt`` + e.g. ``instance_id``) with ``generate`` as the policy."""

    def run(self, row: dict[str, Any], generate: GenerateFn) -> EpisodeResult: ...


def hf_generate(trainer: Any, max_new_tokens: int) -> GenerateFn:
    """A ``generate`` that samples one turn from the trainer's current policy (HF ``generate``)."""
    import torch

    def generate(prompt_ids: list[int]) -> list[int]:
        model = trainer.accelerator.unwrap_model(trainer.model)
        tokenizer = trainer.processing_class
        ids = torch.tensor([prompt_ids], device=model.device)
        with torch.no_grad():
            out = model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                do_sample=True,
                temperature=trainer.args.temperature,
                max_new_tokens=max_new_tokens,
                pad_token_id=tokenizer.pad_token_id,
            )
        return out[0, ids.shape[1] :].tolist()

    return generate


def make_rollout_func(
    runner: EpisodeRunner,
    max_new_tokens: int,
    generate_factory: Callable[[Any, int], GenerateFn] = hf_generate,
) -> Callable[[list, Any], dict[str, Any]]:
    """TRL ``rollout_func``: one episode per prompt entry this process receives (TRL's sampler already repeats
    each prompt ``num_generations`` times); the outcome reward travels as the ``outcome_reward`` column."""

    def rollout(prompts: list, trainer: Any) -> dict[str, Any]:
        generate = generate_factory(trainer, max_new_tokens)
        results = [runner.run({"prompt": prompt}, generate) for prompt in prompts]
        return {
            "prompt_ids": [r.prompt_ids for r in results],
            "completion_ids": [r.completion_ids for r in results],
            "logprobs": None,
            "env_mask": [r.env_mask for r in results],
            "outcome_reward": [r.reward for r in results],
        }

    return rollout


def outcome_reward(prompts: list, completions: list, outcome_reward: list, **_: Any) -> list[float | None]:
    """Reward function for RLVR: the episode's outcome (None = infra failure, no gradient)."""
    return [None if r is None else float(r) for r in outcome_reward]


outcome_reward.__name__ = "outcome_reward"


def run_rlvr(config: Any, *, console: Any = None) -> dict[str, Any]:
    """RLVR stage entry point (``--stage rlvr --init CKPT``)."""
    raise TrainingError(
        f"--stage rlvr (init {config.init}): the environment-backed EpisodeRunner is not wired in yet; "
        "swe_srl.train.rlvr provides make_rollout_func(runner) for it — run --stage srl for now"
    )
