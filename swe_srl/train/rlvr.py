"""SRL → RLVR: multi-turn episodes in the environment with the outcome reward, fed to GRPO through TRL's
``rollout_func`` hook (``GRPOTrainer(rollout_func=...)``, TRL ≥ 1.x, experimental there).

An ``EpisodeRunner`` plays one episode with a ``generate`` function (prompt token ids → one model turn's token
ids) and returns the transcript as token ids with a mask (1 = model tokens, 0 = environment observation tokens,
TRL's ``env_mask``) and the outcome reward (1 resolved, 0 not, None on infra failure → no gradient).
:class:`EnvEpisodeRunner` plays the episodes in :class:`swe_srl.env.swe_env.SWEEnv` (outcome reward, a few turns); the
observation tokens between turns are the chat template's own rendering of the observation as a user turn.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from swe_srl.env.swe_env import SWEEnv
from swe_srl.errors import GradingError, SandboxError, TrainingError

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


def prompt_key(prompt: Any) -> str:
    """A stable key of a dataset prompt (conversational or text), to find the row's instance in the rollout."""
    return json.dumps(prompt, sort_keys=True, ensure_ascii=False)


class EnvEpisodeRunner:
    """Plays one ``SWEEnv`` episode per row with the outcome reward: the model's turns are its tokens (mask 1), the
    observations between them the chat template's user turns (mask 0). Unsubmitted after ``max_turns`` → 0.0;
    an infrastructure failure (sandbox, grading) → None (no gradient)."""

    def __init__(
        self,
        tokenizer: Any,
        instances: list[Any],
        *,
        prompt_ids: dict[str, str] | None = None,
        max_turns: int = 3,
        think_prefix: str = "",
        env_kwargs: dict[str, Any] | None = None,
    ) -> None:

        self.tokenizer, self.max_turns, self.think_prefix = tokenizer, max_turns, think_prefix
        self.instance_of = dict(prompt_ids or {})
        self.env = SWEEnv(instances=instances, reward_mode="outcome", **(env_kwargs or {}))
        self.episodes = 0

    def close(self) -> None:
        self.env.close()

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _render(self, messages: list[dict[str, str]], generation: bool) -> str:
        return str(
            self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation)
        )

    def between_turns(self, messages: list[dict[str, str]], observation: str, ended_with_eos: bool) -> str:
        """The template text after an assistant turn: end of turn, the observation as a user turn, next prompt."""
        mark = "\x00SWE_SRL_TURN\x00"
        full = self._render(
            [*messages, {"role": "assistant", "content": mark}, {"role": "user", "content": observation}],
            True,
        )
        tail = full[full.index(mark) + len(mark) :]
        eos = self.tokenizer.eos_token or ""
        return tail[len(eos) :] if ended_with_eos and eos and tail.startswith(eos) else tail

    def run(self, row: dict[str, Any], generate: GenerateFn) -> EpisodeResult:
        instance_id = row.get("instance_id") or self.instance_of.get(prompt_key(row["prompt"]))
        if not instance_id:
            raise TrainingError("RLVR row has no instance_id and its prompt is not one of the RLVR dataset's")
        self.episodes += 1
        try:
            return self._play(instance_id, generate)
        except (SandboxError, GradingError) as exc:  # infra, not the policy: no gradient
            self.env.close()
            eos = self.tokenizer.eos_token_id or 0
            return EpisodeResult([eos], [eos], [0], None, {"error": str(exc)})

    def _play(self, instance_id: str, generate: GenerateFn) -> EpisodeResult:
        _, info = self.env.reset(options={"instance_id": instance_id})
        messages = list(info["messages"])
        prompt_ids = self._encode(self._render(messages, True))
        completion: list[int] = []
        mask: list[int] = []
        reward, details = 0.0, {"instance_id": instance_id, "turns": 0, "format_errors": 0}
        for turn in range(self.max_turns):
            ids = generate(prompt_ids + completion)
            completion += ids
            mask += [1] * len(ids)
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
            obs, step_reward, terminated, truncated, step_info = self.env.step(self.think_prefix + text)
            details["turns"] = turn + 1
            details["format_errors"] += step_info.get("format_error") is not None
            if terminated:
                reward = float(step_reward)
                details["grade_status"] = step_info.get("grade_status")
                break
            if truncated or turn == self.max_turns - 1:
                break
            ended = bool(ids) and ids[-1] == self.tokenizer.eos_token_id
            messages.append({"role": "assistant", "content": self.think_prefix + text})
            env_ids = self._encode(self.between_turns(messages[:-1], obs, ended))
            messages.append({"role": "user", "content": obs})
            completion += env_ids
            mask += [0] * len(env_ids)
        self.env.close()
        return EpisodeResult(prompt_ids, completion, mask, reward, details)
