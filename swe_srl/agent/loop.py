"""The episode loop, once, for evaluation, ``EnvPool`` and RLVR: episodes step in lock-step.

Each turn, :func:`run_lockstep` asks ``outputs(live)`` for one output per live :class:`~swe_srl.agent.episode.Episode`
(a whole batch at once: one batched generation for all of them), then advances every live episode by one env step
(in threads: Docker calls block on I/O). The default ``outputs`` asks each episode's policy; episodes sharing one
policy object are asked in one ``generate_batch`` call. :func:`run_episode` is the batch of one::

    result = run_episode(SWEEnv(instances=[instance]), GoldPolicy(), instance)
    results = run_episodes_lockstep(envs, HFPolicy(path), instances)   # one batched generate per turn
    results = run_episodes_lockstep(envs, [GoldPolicy() for _ in envs], instances)   # stateful: one each

RLVR records the token ids of every turn on top of this loop (``swe_srl.train.rlvr.TokenRecorder`` is an ``outputs``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from swe_srl.agent.episode import AgentConfig, Episode, EpisodeEnv, EpisodeResult, StepRecord
from swe_srl.agent.policies import Messages, Policy, as_policy, batch_generate
from swe_srl.env.swe_env import SWEEnv
from swe_srl.errors import ConfigError, PolicyError
from swe_srl.infra.sandbox.base import Limits

if TYPE_CHECKING:
    from swe_srl.benchmark.instances import Instance

T = TypeVar("T")
Outputs = Callable[[Sequence[Episode]], Sequence["str | PolicyError"]]
"""Answers the live episodes of one turn: one output each (or the ``PolicyError`` that episode's policy raised)."""
OnStep = Callable[[Episode, StepRecord], None]


def policy_outputs(live: Sequence[Episode]) -> list[str | PolicyError]:
    """Each episode's own policy answers it; episodes sharing a policy object form one batch."""
    groups: dict[int, list[Episode]] = {}
    for episode in live:
        groups.setdefault(id(episode.policy), []).append(episode)
    answers: dict[int, str | PolicyError] = {}
    for group in groups.values():
        policy = group[0].policy
        if policy is None:
            raise ConfigError("an episode without a policy needs an outputs function")
        try:
            texts: list[str | PolicyError] = list(batch_generate(policy, [e.messages() for e in group]))
        except PolicyError as exc:
            texts = [exc] * len(group)
        answers.update(zip(map(id, group), texts, strict=True))
    return [answers[id(e)] for e in live]


def _each(items: Sequence[T], fn: Callable[[T], Any]) -> list[Any]:
    """``fn`` on every item, in threads when there are several (env steps and resets wait on Docker)."""
    if len(items) <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=len(items), thread_name_prefix="swe-srl-episode") as pool:
        return list(pool.map(fn, items))


def run_lockstep(
    episodes: Sequence[Episode], outputs: Outputs = policy_outputs, *, on_step: OnStep | None = None
) -> list[EpisodeResult]:
    """Start the episodes, then per turn get one output per live episode and advance them all; their results.

    An exception other than the policy, sandbox and grading failures (which end their episode) propagates after the
    unfinished episodes' envs are closed (those that ``close``).
    """
    try:
        _each([e for e in episodes if e.started is None], Episode.start)
        while live := [e for e in episodes if e.ready()]:
            records = _each(list(zip(live, _answers(outputs, live), strict=True)), _advance)
            for episode, record in zip(live, records, strict=True):
                if on_step is not None and record is not None:
                    on_step(episode, record)
    except BaseException:
        for episode in episodes:
            if episode.close and not episode.done:
                episode.env.close()
        raise
    return [e.result() for e in episodes]


def _answers(outputs: Outputs, live: list[Episode]) -> list[str | PolicyError]:
    try:
        answers = list(outputs(live))
    except PolicyError as exc:
        answers = [exc] * len(live)
    if len(answers) != len(live):
        raise ConfigError(f"outputs answered {len(answers)} of {len(live)} live episodes")
    return answers


def _advance(pair: tuple[Episode, str | PolicyError]) -> StepRecord | None:
    episode, answer = pair
    if isinstance(answer, PolicyError):
        episode.fail(answer)
        return None
    return episode.advance(answer)


def run_episode(
    env: EpisodeEnv,
    policy: Policy | Callable[[Messages], str],
    instance: Instance | str | None = None,
    config: AgentConfig | None = None,
    *,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
    on_step: OnStep | None = None,
    close: bool = True,
) -> EpisodeResult:
    """One episode of ``policy`` in ``env`` on ``instance`` (or the task ``reset(seed, options)`` picks).

    With ``close`` the env's container is removed at the end; infra and policy failures are error results.
    """
    episode = Episode(env, instance, config or AgentConfig(), as_policy(policy), seed, options, close)
    return run_lockstep([episode], on_step=on_step)[0]


def run_episodes_lockstep(
    envs: Sequence[EpisodeEnv],
    policies: Policy | Sequence[Policy],
    instances: Sequence[Instance | str],
    config: AgentConfig | None = None,
    *,
    on_step: OnStep | None = None,
    close: bool = True,
) -> list[EpisodeResult]:
    """One episode per (env, instance) in lock-step. One policy for all (stateless across episodes: a model, batched
    per turn) or one policy per episode (scripted policies keep per-episode state)."""
    if len(envs) != len(instances):
        raise ConfigError(f"{len(envs)} envs for {len(instances)} instances: give one env per episode")
    per_episode = list(policies) if isinstance(policies, Sequence) else [policies] * len(instances)
    if len(per_episode) != len(instances):
        raise ConfigError(f"{len(per_episode)} policies for {len(instances)} instances")
    config = config or AgentConfig()
    episodes = [
        Episode(env, instance, config, as_policy(policy), close=close)
        for env, instance, policy in zip(envs, instances, per_episode, strict=True)
    ]
    return run_lockstep(episodes, on_step=on_step)


def run_episodes(
    instances: Sequence[Instance],
    policy_factory: Callable[[], Policy],
    *,
    workers: int = 1,
    config: AgentConfig | None = None,
    env_kwargs: dict[str, Any] | None = None,
    on_result: Callable[[EpisodeResult], None] | None = None,
) -> list[EpisodeResult]:
    """Run one episode per instance, ``workers`` at a time; each worker thread owns an env and a policy.

    ``on_result`` is called in the worker thread as each episode ends (grade and save there, incrementally;
    it must be thread-safe). ``env_kwargs`` go to ``SWEEnv`` (``repos_dir``, ``oracle_files``).
    """

    config = config or AgentConfig()
    timeout = config.episode_timeout_s or Limits().episode_timeout_s
    kwargs = {"limits": Limits(episode_timeout_s=timeout), **(env_kwargs or {})}
    local, lock, envs = threading.local(), threading.Lock(), []

    def work(instance: Instance) -> EpisodeResult:
        if not hasattr(local, "env"):
            local.env, local.policy = SWEEnv(instances=list(instances), **kwargs), policy_factory()
            with lock:
                envs.append(local.env)
        result = run_episode(local.env, local.policy, instance, config)
        if on_result is not None:
            on_result(result)
        return result

    try:
        with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="swe-srl-agent") as pool:
            return list(pool.map(work, instances))
    finally:
        for env in envs:
            env.close()
