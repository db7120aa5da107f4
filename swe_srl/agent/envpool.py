"""A pool of environments: episodes of the one agent loop (``swe_srl.agent.loop``) in parallel.

Each ``SWEEnv`` owns its own container, so environments never share files, processes or a cwd. ``run_episodes``
steps ``n`` episodes at a time in lock-step (one batched generation per turn for a shared model policy); ``map``
hands each environment to one thread at a time for any other use::

    with EnvPool(4, dataset="bundled") as pool:
        results = pool.run_episodes(policy, ids, AgentConfig(submit_to_env=True))
        outputs = pool.map(lambda env, iid: run_episode(env, GoldPolicy(), iid, close=False), ids)

A thread pool is used instead of ``gymnasium.vector.AsyncVectorEnv``: vector envs batch observations into arrays,
which suits fixed-shape spaces, not long free-form text, and an agent loop runs episodes of different lengths.
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

import gymnasium

import swe_srl.env  # noqa: F401 - registers SweSrl-v0
from swe_srl.agent.episode import AgentConfig, EpisodeResult
from swe_srl.agent.loop import OnStep, run_episodes_lockstep
from swe_srl.agent.policies import Policy
from swe_srl.errors import ConfigError
from swe_srl.infra.sandbox.pool import WarmPool

if TYPE_CHECKING:
    from swe_srl.benchmark.instances import Instance

T = TypeVar("T")
R = TypeVar("R")


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

    def run_episodes(
        self,
        policies: Policy | Sequence[Policy],
        instances: Sequence[Instance | str],
        config: AgentConfig | None = None,
        *,
        on_step: OnStep | None = None,
    ) -> list[EpisodeResult]:
        """One episode per instance, ``n`` at a time in lock-step; ``policies``: one shared by all (batched per turn)
        or one per instance (see :func:`~swe_srl.agent.loop.run_episodes_lockstep`). Results in order."""
        results: list[EpisodeResult] = []
        n = len(self.envs)
        for at in range(0, len(instances), n):
            wave = list(instances[at : at + n])
            wave_policies = policies[at : at + n] if isinstance(policies, Sequence) else policies
            results += run_episodes_lockstep(
                self.envs[: len(wave)], wave_policies, wave, config, on_step=on_step
            )
        return results

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
