"""The evaluation agent loop: prompt (training format) → policy → env step, until ``submit`` or a limit.

Control flow uses small exceptions, as in mini-swe-agent: ``Submitted`` ends the episode with the patch,
``LimitsExceeded`` ends it at max steps or at the wall clock. Format errors are fed back as observations.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from swe_srl.benchmark.verdicts import is_test_file
from swe_srl.core.actions import SUBMIT, is_submit, parse_output
from swe_srl.core.patches import clean_patch, patch_paths
from swe_srl.core.prompts import build_messages
from swe_srl.env.swe_env import SWEEnv
from swe_srl.errors import ActionFormatError, PolicyError, SandboxError, SandboxTimeout
from swe_srl.infra.sandbox.base import Limits
from swe_srl.trajectories.schema import Step, Trajectory

if TYPE_CHECKING:
    from swe_srl.agent.policies import Policy
    from swe_srl.benchmark.instances import Instance

FORMAT_ERROR_ACTION_CHARS = 2000


class EpisodeEnv(Protocol):
    """What the loop needs from ``swe_srl.env.swe_env.SWEEnv``: Gymnasium reset/step plus the live sandbox."""

    sandbox: Any

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict]: ...

    def step(self, text: str) -> tuple[str, float, bool, bool, dict]: ...

    def close(self) -> None: ...


class Submitted(Exception):
    """The policy ran ``submit``."""


class LimitsExceeded(Exception):
    """Max steps or the episode wall clock is spent; ``reason`` is ``max_steps`` or ``time_limit``."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@dataclass(frozen=True)
class AgentConfig:
    """Limits and prompt options of one episode."""

    max_steps: int = 50
    """Policy calls per episode, format errors included."""
    episode_timeout_s: float = 1800.0
    """Wall clock of the episode; checked before each policy call."""
    observation_chars: int = 2000
    """Each observation in the prompt is cut to this many characters (head + tail)."""
    token_budget: int | None = None
    """Prompt budget in tokens; None → the policy's context minus its ``max_new_tokens`` when known."""


@dataclass
class EpisodeResult:
    """The outcome of one episode: the native trajectory, the patch and why it stopped."""

    instance_id: str
    trajectory: Trajectory
    patch: str
    steps: int
    format_errors: int
    exit_reason: str
    """``submitted`` | ``max_steps`` | ``time_limit`` | ``infra_error`` | ``policy_error``."""
    duration_s: float
    error: str | None = None

    @property
    def is_error(self) -> bool:
        return self.exit_reason in ("infra_error", "policy_error")


@dataclass
class _Episode:
    """Mutable state of one running episode."""

    instance: Instance
    problem: str = ""
    oracle_files: dict[str, str] = field(default_factory=dict)
    history: list[tuple[str, str]] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    calls: int = 0
    format_errors: int = 0
    started: float = field(default_factory=time.monotonic)


def _token_budget(policy: Policy, config: AgentConfig) -> int | None:
    if config.token_budget is not None:
        return config.token_budget
    context = getattr(policy, "context_tokens", None)
    return context - getattr(policy, "max_new_tokens", 0) if context else None


def _one_step(env: EpisodeEnv, policy: Policy, ep: _Episode, config: AgentConfig) -> None:
    if ep.calls >= config.max_steps:
        raise LimitsExceeded("max_steps")
    if time.monotonic() - ep.started > config.episode_timeout_s:
        raise LimitsExceeded("time_limit")
    messages = build_messages(
        ep.problem,
        ep.history,
        oracle_files=ep.oracle_files or None,
        observation_chars=config.observation_chars,
        token_budget=_token_budget(policy, config),
        count_tokens=getattr(policy, "count_tokens", None),
    )
    text = policy.generate(messages)
    ep.calls += 1
    try:
        parsed = parse_output(text)
    except ActionFormatError:
        parsed = None
    if parsed is not None and is_submit(parsed.action):
        ep.steps.append(Step(thought=parsed.thought, action=SUBMIT))
        raise Submitted
    observation, _, _, truncated, info = env.step(text)
    if info.get("format_error") or parsed is None:
        ep.format_errors += 1
        ep.history.append((text.strip()[:FORMAT_ERROR_ACTION_CHARS], observation))
    else:
        ep.history.append((parsed.action, observation))
        ep.steps.append(Step(parsed.thought, parsed.action, observation, info.get("exit_code")))
    if truncated:  # the env's own wall clock
        raise LimitsExceeded("time_limit")


def _final_patch(env: EpisodeEnv, instance: Instance) -> str:
    """The submission: the repo's diff against base without test files (grading's rule) and build junk."""

    diff = env.sandbox.diff()
    tests = patch_paths(instance.test_patch) | {p for p in patch_paths(diff) if is_test_file(p, instance)}
    return clean_patch(diff, tests)


def run_episode(
    env: EpisodeEnv,
    policy: Policy,
    instance: Instance,
    config: AgentConfig | None = None,
    *,
    close: bool = True,
) -> EpisodeResult:
    """Run one episode of ``policy`` on ``instance`` in ``env`` (which must know the instance).

    ``submit`` is not sent to the env (evaluation grades the cleaned patch itself); with ``close`` the env's
    container is removed at the end.

    Infra failures (``SandboxError``) and policy failures (``PolicyError``) end the episode with an error result
    rather than an exception, so an evaluation run can list them apart from wrong patches.
    """
    config = config or AgentConfig()
    ep = _Episode(instance)
    reason, error, patch = "submitted", None, ""
    try:
        _, info = env.reset(options={"instance_id": instance.instance_id})
        ep.problem, ep.oracle_files = (
            info.get("problem", instance.problem_statement),
            info.get("oracle_files") or {},
        )
        policy.reset(instance)
        while True:
            _one_step(env, policy, ep, config)
    except Submitted:
        reason = "submitted"
    except LimitsExceeded as exc:
        reason = exc.reason
    except SandboxTimeout as exc:
        reason, error = "time_limit", str(exc)
    except SandboxError as exc:
        reason, error = "infra_error", f"{type(exc).__name__}: {exc}"
    except PolicyError as exc:
        reason, error = "policy_error", str(exc)
    if reason in ("submitted", "max_steps", "time_limit"):
        try:
            patch = _final_patch(env, instance)
        except SandboxError as exc:
            reason, error = ("time_limit" if isinstance(exc, SandboxTimeout) else "infra_error"), str(exc)
    if close:
        env.close()
    duration = time.monotonic() - ep.started
    trajectory = Trajectory(
        instance_id=instance.instance_id,
        problem=ep.problem or instance.problem_statement,
        steps=ep.steps,
        patch=patch,
        source="agent",
        metadata={
            "policy": getattr(policy, "name", type(policy).__name__),
            "exit_reason": reason,
            "policy_calls": ep.calls,
            "format_errors": ep.format_errors,
            "duration_s": round(duration, 3),
            "oracle_files": sorted(ep.oracle_files),
            **({"error": error} if error else {}),
        },
    )
    return EpisodeResult(
        instance.instance_id, trajectory, patch, ep.calls, ep.format_errors, reason, duration, error
    )


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
    kwargs = {"limits": Limits(episode_timeout_s=config.episode_timeout_s), **(env_kwargs or {})}
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
