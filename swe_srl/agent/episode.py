"""One episode as an explicit state object, so that several can step in lock-step (``swe_srl.agent.loop``).

``Episode.start()`` resets the env; then, while ``ready()``, ``messages()`` is the next prompt and ``advance(output)``
applies one env step. The output is parsed once (:class:`~swe_srl.core.actions.Completion`): the loop, the env and the
env's reward share that parse. Control flow as in mini-swe-agent: ``submit`` ends the episode with the patch (by
default without sending it to the env: evaluation grades the cleaned patch itself); max steps and the wall clock end
it too; format errors are fed back as observations; infra (``SandboxError``, ``GradingError``) and policy
(``PolicyError``) failures end it with an error result rather than an exception.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from swe_srl.benchmark.verdicts import is_test_file
from swe_srl.core.actions import SUBMIT, Completion, ParsedOutput, is_submit
from swe_srl.core.patches import clean_patch, patch_paths
from swe_srl.core.prompts import build_messages
from swe_srl.core.shells import PERSISTENT
from swe_srl.errors import GradingError, PolicyError, SandboxError, SandboxTimeout
from swe_srl.trajectories.schema import Step, Trajectory

if TYPE_CHECKING:
    from swe_srl.agent.policies import Policy
    from swe_srl.benchmark.instances import Instance

FORMAT_ERROR_ACTION_CHARS = 2000
PATCH_REASONS = ("submitted", "max_steps", "time_limit", "truncated")


class EpisodeEnv(Protocol):
    """What an episode needs from ``SWEEnv`` (or a Gymnasium wrapper of it): reset/step/close and the sandbox."""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict]: ...

    def step(self, text: str) -> tuple[str, float, bool, bool, dict]: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class AgentConfig:
    """Limits and prompt options of one episode."""

    max_steps: int | None = 50
    """Policy calls per episode, format errors included (None: until the env ends it)."""
    episode_timeout_s: float | None = 1800.0
    """Wall clock of the episode; checked before each policy call (None: the env's own clock only)."""
    observation_chars: int = 2000
    """Each observation in the prompt is cut to this many characters (head + tail)."""
    token_budget: int | None = None
    """Prompt budget in tokens; None → the policy's context minus its ``max_new_tokens`` when known."""
    submit_to_env: bool = False
    """Send ``submit`` to the env (which grades or scores it: RLVR, the demo) instead of ending the episode here."""


@dataclass
class StepRecord:
    """One policy output and what the env answered (an intercepted ``submit`` has no observation)."""

    output: str
    observation: str
    reward: float
    info: dict[str, Any]
    parsed: ParsedOutput | None

    @property
    def format_error(self) -> bool:
        return self.parsed is None or bool(self.info.get("format_error"))

    @property
    def shown_action(self) -> str:
        """The action as later prompts show it; a malformed output is shown as written (cut)."""
        if self.format_error or self.parsed is None:
            return self.output.strip()[:FORMAT_ERROR_ACTION_CHARS]
        return self.parsed.action


@dataclass
class EpisodeResult:
    """What one episode produced: its steps, why it stopped, the patch (test files excluded) and the trajectory."""

    instance_id: str
    steps: list[StepRecord]
    exit_reason: str
    """``submitted`` | ``max_steps`` | ``time_limit`` | ``truncated`` | ``infra_error`` | ``policy_error``."""
    patch: str
    trajectory: Trajectory
    calls: int
    """Policy calls (a call whose env step failed has no step record)."""
    duration_s: float
    error: str | None = None
    patch_notes: list[str] = field(default_factory=list)
    """What the patch leaves out (binary files, files over the size cap), one note each."""

    @property
    def format_errors(self) -> int:
        return sum(s.format_error for s in self.steps)

    @property
    def total_reward(self) -> float:
        return sum(s.reward for s in self.steps)

    @property
    def terminated(self) -> bool:
        return self.exit_reason == "submitted"

    @property
    def truncated(self) -> bool:
        return self.exit_reason in ("max_steps", "time_limit", "truncated")

    @property
    def is_error(self) -> bool:
        return self.exit_reason in ("infra_error", "policy_error")


@dataclass(eq=False)
class Episode:
    """The mutable state of one episode of ``policy`` in ``env`` (``instance``: an Instance, an id, or None to let
    ``reset(seed=seed, options=options)`` pick). With ``close`` the env's container goes when the episode ends."""

    env: EpisodeEnv
    instance: Instance | str | None = None
    config: AgentConfig = field(default_factory=AgentConfig)
    policy: Policy | None = None
    seed: int | None = None
    options: dict[str, Any] | None = None
    close: bool = True
    steps: list[StepRecord] = field(default_factory=list)
    instance_id: str = ""
    problem: str = ""
    oracle_files: dict[str, str] = field(default_factory=dict)
    calls: int = 0
    started: float | None = None
    exit_reason: str | None = None
    error: str | None = None
    patch: str = ""
    patch_notes: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    shell: str = PERSISTENT
    """How the env runs this episode's commands (its reset's ``info["shell"]``); the prompt says so."""

    @property
    def done(self) -> bool:
        return self.exit_reason is not None

    def start(self) -> None:
        """Reset the env on the episode's task and the policy on its instance."""
        self.started = time.monotonic()
        options = dict(self.options or {})
        if isinstance(self.instance, str):
            options["instance_id"] = self.instance
        elif self.instance is not None:
            options["instance_id"] = self.instance.instance_id
        self.instance_id = options.get("instance_id", "")
        shell_for = getattr(self.policy, "shell_for", None)  # a replay runs as its trajectory's agent ran
        if shell_for is not None and (shell := shell_for(self.instance_id)) not in (None, PERSISTENT):
            options.setdefault("shell", shell)
        try:
            _, info = self.env.reset(seed=self.seed, options=options or None)
            self.instance_id = info.get("instance_id", self.instance_id)
            self.shell = info.get("shell", self.shell)
            if self.instance is None or isinstance(self.instance, str):
                self.instance = getattr(getattr(self.env, "unwrapped", self.env), "instance", None)
            default = self.instance.problem_statement if self.instance is not None else ""
            self.problem, self.oracle_files = info.get("problem", default), info.get("oracle_files") or {}
            if self.policy is not None:
                self.policy.reset(self.instance)
        except PolicyError as exc:
            self.fail(exc)
        except (SandboxError, GradingError) as exc:
            self._end_infra(exc)

    def ready(self) -> bool:
        """Whether the episode wants another output; a spent step or time limit ends it here."""
        if self.done:
            return False
        if self.config.max_steps is not None and self.calls >= self.config.max_steps:
            self.end("max_steps")
        elif self.config.episode_timeout_s is not None and self._elapsed() > self.config.episode_timeout_s:
            self.end("time_limit")
        return not self.done

    def messages(self) -> list[dict[str, str]]:
        """The next prompt: problem (and oracle files), then each earlier action and its observation."""
        return build_messages(
            self.problem,
            [(s.shown_action, s.observation) for s in self.steps],
            oracle_files=self.oracle_files or None,
            observation_chars=self.config.observation_chars,
            token_budget=self._token_budget(),
            count_tokens=getattr(self.policy, "count_tokens", None),
            shell=self.shell,
        )

    def advance(self, output: str) -> StepRecord | None:
        """Apply one policy output: parse it (once), step the env, record the step; None when the step failed."""
        completion = Completion(output)
        self.calls += 1
        parsed = completion.parsed
        if parsed is not None and is_submit(parsed.action) and not self.config.submit_to_env:
            info = {"instance_id": self.instance_id, "action": SUBMIT, "format_error": None}
            record = StepRecord(completion, "", 0.0, info, parsed)
            self.steps.append(record)
            self.end("submitted")
            return record
        try:
            observation, reward, terminated, truncated, info = self.env.step(completion)
        except SandboxTimeout as exc:
            self.end("time_limit", str(exc))
            return None
        except (SandboxError, GradingError) as exc:
            self._end_infra(exc)
            return None
        record = StepRecord(completion, observation, float(reward), info, parsed)
        self.steps.append(record)
        if terminated:
            self.end("submitted")
        elif truncated:  # the env's own wall clock, or a Gymnasium step limit
            self.end("time_limit" if info.get("truncation") == "wall_clock" else "truncated")
        return record

    def fail(self, exc: PolicyError) -> None:
        self.end("policy_error", str(exc))

    def end(self, reason: str, error: str | None = None) -> None:
        """Stop the episode: take the patch (unless it failed), then close the env when asked."""
        if self.done:
            return
        self.exit_reason, self.error = reason, error
        if reason in PATCH_REASONS:
            try:
                self.patch = self._final_patch()
            except SandboxError as exc:
                self.exit_reason = "time_limit" if isinstance(exc, SandboxTimeout) else "infra_error"
                self.error = str(exc)
        self.duration_s = self._elapsed()
        if self.close:
            self.env.close()

    def _end_infra(self, exc: Exception) -> None:
        if isinstance(exc, SandboxTimeout):
            self.end("time_limit", str(exc))
        else:
            self.end("infra_error", f"{type(exc).__name__}: {exc}")

    def _elapsed(self) -> float:
        return time.monotonic() - self.started if self.started is not None else 0.0

    def _token_budget(self) -> int | None:
        if self.config.token_budget is not None:
            return self.config.token_budget
        context = getattr(self.policy, "context_tokens", None)
        return context - getattr(self.policy, "max_new_tokens", 0) if context else None

    def _final_patch(self) -> str:
        """The submission: the repo's diff against base without test files (grading's rule) and build junk.

        Computed once, here (the env's steps never diff): ``info["patch"]`` of a submit the env handled, else the
        env's :meth:`~swe_srl.env.swe_env.SWEEnv.patch` (binary files and files over the size cap left out; they
        are listed in ``patch_notes``).
        """
        last = self.steps[-1] if self.steps else None
        env = getattr(self.env, "unwrapped", self.env)
        if last is not None and "patch" in last.info and self.exit_reason == "submitted":
            diff = last.info["patch"]
            self.patch_notes = list(last.info.get("patch_left_out") or [])
        elif hasattr(env, "patch"):
            diff = env.patch()
            self.patch_notes = list(getattr(env, "patch_notes", []))
        else:
            diff = env.sandbox.diff()  # type: ignore[attr-defined]
        instance = self.instance if not isinstance(self.instance, str) else None
        tests = patch_paths(instance.test_patch) if instance is not None else set()
        tests |= {p for p in patch_paths(diff) if instance is not None and is_test_file(p, instance)}
        return clean_patch(diff, tests)

    def result(self) -> EpisodeResult:
        """The finished episode's result, with its native trajectory (format errors left out)."""
        instance = self.instance if not isinstance(self.instance, str) else None
        problem = self.problem or (instance.problem_statement if instance is not None else "")
        steps = [
            Step(thought=s.parsed.thought, action=SUBMIT)
            if is_submit(s.parsed.action)
            else Step(s.parsed.thought, s.parsed.action, s.observation, s.info.get("exit_code"))
            for s in self.steps
            if not s.format_error and s.parsed is not None
        ]
        reason = self.exit_reason or "running"
        metadata = {
            "policy": getattr(self.policy, "name", type(self.policy).__name__) if self.policy else "none",
            "exit_reason": reason,
            "policy_calls": self.calls,
            "format_errors": sum(s.format_error for s in self.steps),
            "duration_s": round(self.duration_s, 3),
            "oracle_files": sorted(self.oracle_files),
            **({"error": self.error} if self.error else {}),
            **({"patch_left_out": self.patch_notes} if self.patch_notes else {}),
        }
        trajectory = Trajectory(
            self.instance_id, problem, steps, self.patch, source="agent", metadata=metadata
        )
        trajectory.shell = self.shell
        return EpisodeResult(
            self.instance_id,
            self.steps,
            reason,
            self.patch,
            trajectory,
            self.calls,
            self.duration_s,
            self.error,
            list(self.patch_notes),
        )
