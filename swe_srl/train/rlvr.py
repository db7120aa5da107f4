"""SRL → RLVR: multi-turn episodes in the environment with the outcome reward, fed to GRPO through TRL's
``rollout_func`` hook (``GRPOTrainer(rollout_func=...)``, TRL ≥ 1.x, experimental there).

An ``EpisodeRunner`` plays one episode with a ``generate`` function (prompt token ids → one model turn's token
ids) and returns the transcript as a :class:`Rollout`: token ids with a mask (1 = model tokens, 0 = environment
observation tokens, TRL's ``env_mask``) and the outcome reward (1 resolved, 0 not, None on infra failure → no
gradient). :class:`EnvEpisodeRunner` plays the episodes in :class:`swe_srl.env.swe_env.SWEEnv` with the agent loop
(``swe_srl.agent.loop``), several at once (``run_batch``: one env each, one batched generation per turn);
:class:`TokenRecorder` is the loop's ``outputs``: it keeps each episode's tokens, the observation tokens between turns
being the chat template's own rendering of the observation as a user turn.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from swe_srl.agent.episode import AgentConfig, Episode, EpisodeResult
from swe_srl.agent.loop import run_lockstep
from swe_srl.agent.models import generate_ids
from swe_srl.env.swe_env import SWEEnv
from swe_srl.errors import TrainingError
from swe_srl.train.sharding import full_weights

GenerateFn = Callable[[list[int]], list[int]]
"""Prompt token ids → one model turn's token ids."""
GenerateBatchFn = Callable[[list[list[int]]], list[list[int]]]


@dataclass
class Rollout:
    """One finished episode, as token ids of the whole transcript after the initial prompt."""

    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]
    reward: float | None
    info: dict[str, Any] = field(default_factory=dict)
    episode: EpisodeResult | None = None
    """The agent loop's result (steps, exit reason, patch); None for runners outside the env."""

    def __post_init__(self) -> None:
        if len(self.env_mask) != len(self.completion_ids):
            raise TrainingError(
                f"episode env_mask has {len(self.env_mask)} entries for {len(self.completion_ids)} tokens"
            )


class EpisodeRunner(Protocol):
    """Runs one episode for a dataset row (``prompt`` + e.g. ``instance_id``) with ``generate`` as the policy.
    Optional: ``run_batch(rows, generate_batch) -> list[Rollout]``, the rows' episodes played together."""

    def run(self, row: dict[str, Any], generate: GenerateFn) -> Rollout: ...


def hf_generate_batch(trainer: Any, max_new_tokens: int, greedy: bool = False) -> GenerateBatchFn:
    """A ``generate_batch`` that samples one turn per context from the trainer's current policy (one HF
    ``generate`` call for all of them); ``greedy`` for evaluation."""

    def generate(batch: list[list[int]]) -> list[list[int]]:
        model = trainer.accelerator.unwrap_model(trainer.model)
        temperature = 0.0 if greedy else trainer.args.temperature
        # inside full_weights every process holds the whole weights: no step waits for the other processes
        return generate_ids(
            model, trainer.processing_class, batch, max_new_tokens, temperature, synced_gpus=False
        )

    return generate


def make_rollout_func(
    runner: EpisodeRunner,
    max_new_tokens: int,
    generate_factory: Callable[[Any, int], GenerateBatchFn] = hf_generate_batch,
) -> Callable[[list, Any], dict[str, Any]]:
    """TRL ``rollout_func``: one episode per prompt entry this process receives (TRL's sampler already repeats
    each prompt ``num_generations`` times), played together when the runner has ``run_batch`` (one batched
    generation per turn); the outcome reward travels as the ``outcome_reward`` column, each episode's (model
    turns that parse, model turns) as ``format_turns``."""

    def rollout(prompts: list, trainer: Any) -> dict[str, Any]:
        generate_batch = generate_factory(trainer, max_new_tokens)
        rows = [{"prompt": prompt} for prompt in prompts]
        run_batch = getattr(runner, "run_batch", None)
        with full_weights(
            getattr(trainer, "model", None)
        ):  # FSDP: gathered once; each process's episodes take their own turns
            if run_batch is not None:
                results = run_batch(rows, generate_batch)
            else:
                results = [runner.run(row, lambda ids: generate_batch([ids])[0]) for row in rows]
        return {
            "prompt_ids": [r.prompt_ids for r in results],
            "completion_ids": [r.completion_ids for r in results],
            "logprobs": None,
            "env_mask": [r.env_mask for r in results],
            "outcome_reward": [r.reward for r in results],
            "format_turns": [[r.info.get("format_ok", 0), r.info.get("turns", 0)] for r in results],
        }

    return rollout


class OutcomeReward:
    """Reward function for RLVR: the episode's outcome (None = infra failure, no gradient). Keeps the last batch's
    per-turn format compliance (model turns that parse / model turns) as ``last_turn_format``."""

    __name__ = "outcome_reward"

    def __init__(self) -> None:
        self.last_turn_format: float | None = None

    def __call__(self, prompts: list, completions: list, outcome_reward: list, **columns: Any) -> list:
        turns = columns.get("format_turns") or []
        total = sum(t[1] for t in turns)
        self.last_turn_format = sum(t[0] for t in turns) / total if total else None
        return [None if r is None else float(r) for r in outcome_reward]


outcome_reward = OutcomeReward()


def prompt_key(prompt: Any) -> str:
    """A stable key of a dataset prompt (conversational or text), to find the row's instance in the rollout."""
    return json.dumps(prompt, sort_keys=True, ensure_ascii=False)


@dataclass
class _Transcript:
    messages: list[dict[str, str]]
    prompt_ids: list[int]
    completion: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    last_turn: list[int] = field(default_factory=list)
    steps_seen: int = 0


class TokenRecorder:
    """The agent loop's ``outputs`` for RLVR: generates each live episode's next turn as token ids (one
    ``generate_batch`` call per turn) and keeps every episode's transcript: model tokens (mask 1) and, before the
    next turn, the observation the env answered, rendered as the chat template's user turn (mask 0)."""

    def __init__(self, tokenizer: Any, generate_batch: GenerateBatchFn, think_prefix: str = "") -> None:
        self.tokenizer, self.generate_batch, self.think_prefix = tokenizer, generate_batch, think_prefix
        self.transcripts: dict[Episode, _Transcript] = {}

    def __call__(self, live: list[Episode]) -> list[str]:
        contexts = [self._context(episode) for episode in live]
        turns = self.generate_batch([t.prompt_ids + t.completion for t in contexts])
        texts = []
        for transcript, ids in zip(contexts, turns, strict=True):
            ids = list(ids)
            transcript.completion += ids
            transcript.mask += [1] * len(ids)
            transcript.last_turn = ids
            text = self.think_prefix + self.tokenizer.decode(ids, skip_special_tokens=True)
            transcript.messages.append({"role": "assistant", "content": text})
            texts.append(text)
        return texts

    def _context(self, episode: Episode) -> _Transcript:
        transcript = self.transcripts.get(episode)
        if transcript is None:
            messages = list(episode.messages())
            transcript = self.transcripts[episode] = _Transcript(
                messages, self._encode(self._render(messages, True))
            )
        for step in episode.steps[transcript.steps_seen :]:  # the observations since the last turn
            last = transcript.last_turn
            ended = bool(last) and last[-1] == self.tokenizer.eos_token_id
            env_ids = self._encode(self.between_turns(transcript.messages[:-1], step.observation, ended))
            transcript.messages.append({"role": "user", "content": step.observation})
            transcript.completion += env_ids
            transcript.mask += [0] * len(env_ids)
        transcript.steps_seen = len(episode.steps)
        return transcript

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

    def rollout(self, episode: Episode, result: EpisodeResult) -> Rollout:
        """The episode's tokens and outcome reward: the graded submit's reward, 0.0 unsubmitted, None on an infra
        failure (no gradient)."""
        if result.exit_reason == "policy_error":
            raise TrainingError(f"RLVR episode {result.instance_id}: {result.error}")
        transcript = self.transcripts.get(episode)
        if transcript is None or (result.error and result.exit_reason in ("infra_error", "time_limit")):
            eos = self.tokenizer.eos_token_id or 0
            return Rollout([eos], [eos], [0], None, {"error": result.error}, result)
        details: dict[str, Any] = {"instance_id": result.instance_id, "turns": len(result.steps)}
        details["format_errors"] = sum(s.info.get("format_error") is not None for s in result.steps)
        details["format_ok"] = sum(
            s.parsed is not None for s in result.steps
        )  # model turns parse_output takes
        reward = 0.0
        if result.terminated:
            reward = float(result.steps[-1].reward)
            details["grade_status"] = result.steps[-1].info.get("grade_status")
        return Rollout(transcript.prompt_ids, transcript.completion, transcript.mask, reward, details, result)


class EnvEpisodeRunner:
    """Plays ``SWEEnv`` episodes with the outcome reward, through the agent loop and a :class:`TokenRecorder`: the
    model's turns are its tokens (mask 1), the observations between them the chat template's user turns (mask 0).
    :meth:`run_batch` plays up to ``parallel`` episodes at once (one env each, stepped in threads; one batched
    generation per turn for all live ones). Unsubmitted after ``max_turns`` → 0.0; an infrastructure failure
    (sandbox, grading) → None (no gradient)."""

    def __init__(
        self,
        tokenizer: Any,
        instances: list[Any],
        *,
        prompt_ids: dict[str, str] | None = None,
        max_turns: int = 3,
        think_prefix: str = "",
        env_kwargs: dict[str, Any] | None = None,
        parallel: int = 1,
    ) -> None:

        self.tokenizer, self.max_turns, self.think_prefix = tokenizer, max_turns, think_prefix
        self.instance_of = dict(prompt_ids or {})
        self.instances, self.env_kwargs = list(instances), dict(env_kwargs or {})
        self.parallel = max(1, parallel)
        self.envs: list[SWEEnv] = []
        self.config = AgentConfig(max_steps=max_turns, episode_timeout_s=None, submit_to_env=True)
        self.episodes = 0

    def close(self) -> None:
        for env in self.envs:
            env.close()

    def _env(self, k: int) -> SWEEnv:
        while len(self.envs) <= k:
            self.envs.append(SWEEnv(instances=self.instances, reward_mode="outcome", **self.env_kwargs))
        return self.envs[k]

    def instance_id(self, row: dict[str, Any]) -> str:
        instance_id = row.get("instance_id") or self.instance_of.get(prompt_key(row["prompt"]))
        if not instance_id:
            raise TrainingError("RLVR row has no instance_id and its prompt is not one of the RLVR dataset's")
        return str(instance_id)

    def run(self, row: dict[str, Any], generate: GenerateFn) -> Rollout:
        """One episode, the policy asked one context at a time."""
        return self.run_batch([row], lambda batch: [generate(ids) for ids in batch])[0]

    def run_batch(self, rows: list[dict[str, Any]], generate_batch: GenerateBatchFn) -> list[Rollout]:
        """One episode per row, ``parallel`` at a time in lock-step; the rollouts in row order."""
        ids = [self.instance_id(row) for row in rows]
        rollouts: list[Rollout] = []
        for start in range(0, len(ids), self.parallel):
            chunk = ids[start : start + self.parallel]
            self.episodes += len(chunk)
            recorder = TokenRecorder(self.tokenizer, generate_batch, self.think_prefix)
            episodes = [Episode(self._env(k), iid, self.config) for k, iid in enumerate(chunk)]
            results = run_lockstep(episodes, recorder)
            rollouts += [recorder.rollout(e, r) for e, r in zip(episodes, results, strict=True)]
        return rollouts
