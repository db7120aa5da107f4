"""Running episodes: one episode loop, scripted model outputs, and a pool of environments used from threads.

Each ``SWEEnv`` owns its own container, so environments never share files, processes or a cwd. The pool hands
each environment to one thread at a time; Docker calls block on I/O, so threads run episodes in parallel::

    with EnvPool(4, dataset="bundled") as pool:
        episodes = pool.map(lambda env, iid: run_episode(env, policy, options={"instance_id": iid}), ids)

A thread pool is used instead of ``gymnasium.vector.AsyncVectorEnv``: vector envs batch observations into arrays,
which suits fixed-shape spaces, not long free-form text, and an agent loop runs episodes of different lengths.
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import gymnasium

import swe_srl.env  # noqa: F401 - registers SweSrl-v0
from swe_srl.core.actions import format_output
from swe_srl.errors import ConfigError, SweSrlError
from swe_srl.infra.sandbox.pool import WarmPool

T = TypeVar("T")
R = TypeVar("R")
Policy = Callable[[str, dict[str, Any]], str]
"""Maps (observation, info) to the model's full output text."""
PATCH_EOF = "SWE_SRL_PATCH_EOF"


@dataclass
class StepRecord:
    """One transition as the agent saw it."""

    output: str
    observation: str
    reward: float
    info: dict[str, Any]


@dataclass
class Episode:
    """What one episode produced."""

    instance_id: str
    steps: list[StepRecord] = field(default_factory=list)
    terminated: bool = False
    truncated: bool = False

    @property
    def total_reward(self) -> float:
        return sum(s.reward for s in self.steps)

    @property
    def patch(self) -> str:
        return self.steps[-1].info.get("patch", "") if self.steps else ""


class ScriptedOutputs:
    """Replays fixed model outputs in order, whatever the observation; raises when the script runs out."""

    def __init__(self, outputs: Sequence[str]) -> None:
        self.outputs = list(outputs)
        self.calls = 0

    def __call__(self, observation: str, info: dict[str, Any]) -> str:
        if self.calls >= len(self.outputs):
            raise SweSrlError(f"ScriptedOutputs ran out of script after {len(self.outputs)} outputs")
        self.calls += 1
        return self.outputs[self.calls - 1]


def gold_patch_outputs(patch: str) -> list[str]:
    """Model outputs that fix a task with its gold patch: look, apply (heredoc + git apply), test, submit."""
    if PATCH_EOF in patch:
        raise ConfigError(f"the patch contains the heredoc terminator {PATCH_EOF!r}; cannot script it")
    body = patch if patch.endswith("\n") else patch + "\n"
    return [
        format_output("Look at the repository first.", "git status --short && ls"),
        format_output("Apply the fix.", f"git apply --verbose <<'{PATCH_EOF}'\n{body}{PATCH_EOF}"),
        format_output(
            "Run the test suite.",
            "PYTHONDONTWRITEBYTECODE=1 python -m pytest -q -p no:cacheprovider 2>&1 | tail -n 5",
        ),
        format_output("The fix is in; submit.", "submit"),
    ]


def run_episode(
    env: gymnasium.Env,
    policy: Policy,
    *,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
    on_step: Callable[[int, StepRecord], None] | None = None,
) -> Episode:
    """Reset ``env`` and step it with ``policy`` until it terminates or is truncated."""
    observation, info = env.reset(seed=seed, options=options)
    episode = Episode(instance_id=info["instance_id"])
    while not (episode.terminated or episode.truncated):
        output = policy(observation, info)
        observation, reward, episode.terminated, episode.truncated, info = env.step(output)
        record = StepRecord(output=output, observation=observation, reward=float(reward), info=info)
        episode.steps.append(record)
        if on_step is not None:
            on_step(len(episode.steps) - 1, record)
    return episode


class EnvPool:
    """``n`` independent ``SweSrl-v0`` environments, each used by at most one thread at a time.

    ``map(fn, items)`` calls ``fn(env, item)`` for every item, ``n`` at a time, and returns the results in order.
    ``env_kwargs`` go to ``gymnasium.make`` (``dataset``, ``reward_mode``, ``limits``, ``max_episode_steps``...).
    ``warm > 0`` shares a :class:`~swe_srl.infra.sandbox.pool.WarmPool` keeping that many containers started ahead.
    """

    def __init__(self, n: int, *, warm: int = 0, **env_kwargs: Any) -> None:
        if n < 1:
            raise ConfigError(f"EnvPool(n={n}): need at least one environment")

        self.envs: list[gymnasium.Env] = []
        self.warm_pool = None
        try:
            if warm > 0:
                self.warm_pool = env_kwargs["warm_pool"] = WarmPool(size=warm)
            for _ in range(n):
                self.envs.append(gymnasium.make("SweSrl-v0", **env_kwargs))
        except BaseException:
            self.close()
            raise

    def map(self, fn: Callable[[gymnasium.Env, T], R], items: Iterable[T]) -> list[R]:
        free: queue.SimpleQueue[gymnasium.Env] = queue.SimpleQueue()
        for env in self.envs:
            free.put(env)

        def work(item: T) -> R:
            env = free.get()
            try:
                return fn(env, item)
            finally:
                free.put(env)

        with ThreadPoolExecutor(max_workers=len(self.envs), thread_name_prefix="swe-srl-env") as pool:
            return list(pool.map(work, items))

    def close(self) -> None:
        """Close every environment (idempotent); removes their containers."""
        for env in self.envs:
            env.close()
        if self.warm_pool is not None:
            self.warm_pool.close()

    def __enter__(self) -> EnvPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
