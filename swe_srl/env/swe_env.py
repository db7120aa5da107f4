"""The Gymnasium environment: one SWE task per episode, in a resource-limited Docker sandbox.

``reset()`` starts a container on the instance image (at the expert state before ``options["step"]`` when an expert
trajectory is given) and returns the task prompt. ``step(text)`` parses the model output (``<think>…</think>`` + one
bash action), runs the action and returns its output. Rewards: ``outcome`` (1.0 when grading resolves the submitted
patch), ``srl`` (similarity to the expert action of this step), ``layered`` (syntax/semantic/effect); −1 on a format
error in every mode. Registered as ``SweSrl-v0`` (``TimeLimit`` of 50 steps) when this module is imported.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium
from gymnasium import spaces

from swe_srl.benchmark.instances import load_instances
from swe_srl.core.actions import Completion, is_submit, parse_output
from swe_srl.core.patches import clean_patch
from swe_srl.core.shells import PERSISTENT, check_shell
from swe_srl.env.reset import episode_shell, find_instance, read_oracle_files, reset_messages, start_sandbox
from swe_srl.env.step_reward import ExpertStepReward
from swe_srl.env.text import (
    ACTION_MAX_CHARS,
    CHARSET,
    OBS_MAX_CHARS,
    format_observation,
    render_messages,
    sanitize,
)
from swe_srl.errors import (
    ActionFormatError,
    ConfigError,
    GradingError,
    SandboxError,
    SandboxTimeout,
    TaskError,
)
from swe_srl.grading.runner import grade
from swe_srl.infra.sandbox.base import Limits
from swe_srl.rewards import EFFECT_MODES
from swe_srl.trajectories.expert_state import expert_states, restore

if TYPE_CHECKING:
    from swe_srl.benchmark.instances import Instance
    from swe_srl.infra.sandbox.docker import DockerSandbox
    from swe_srl.infra.sandbox.pool import WarmPool
    from swe_srl.trajectories.schema import Trajectory

ENV_ID = "SweSrl-v0"
REWARD_MODES = ("outcome", "srl", "layered")


class SWEEnv(gymnasium.Env[str, str]):
    """A repository-fixing episode: the observation is text, the action is the model's full output text.

    ``reset(options={"instance_id": ..., "trajectory": Trajectory, "step": k})`` picks the task (default: one drawn
    with ``self.np_random``) and, for the step-wise reward modes, the expert reference: the sandbox starts at the
    expert state before step ``k`` and env step ``t`` is compared with expert step ``k + t``. Commands run in the
    env's ``shell`` (``persistent`` or ``per-action``), or the trajectory's, or the reset option ``"shell"``'s
    (``info["shell"]`` says which; the system prompt too). ``sandbox`` is the live
    :class:`~swe_srl.infra.sandbox.docker.DockerSandbox` (None outside an episode); with ``warm_pool`` (a
    :class:`~swe_srl.infra.sandbox.pool.WarmPool`, possibly shared by several envs) resets take an already started one. A container that dies mid-episode
    raises :class:`~swe_srl.errors.ContainerDied` from ``step()`` after the env closed itself.
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        dataset: str = "bundled",
        *,
        reward_mode: str = "outcome",
        limits: Limits | Mapping[str, Any] | None = None,
        repos_dir: str | None = None,
        oracle_files: bool = False,
        oracle_window: int | None = None,
        weights: dict[str, float] | None = None,
        effect_mode: str = "off",
        instances: list[Instance] | None = None,
        warm_pool: WarmPool | None = None,
        strict_grading: bool = True,
        shell: str = PERSISTENT,
    ) -> None:
        if reward_mode not in REWARD_MODES:
            raise ConfigError(f"reward_mode={reward_mode!r}: choose one of {', '.join(REWARD_MODES)}")
        if effect_mode not in EFFECT_MODES:
            raise ConfigError(f"effect_mode={effect_mode!r}: choose one of {', '.join(EFFECT_MODES)}")
        self.dataset = dataset
        self.reward_mode = reward_mode
        self.limits = Limits(**limits) if isinstance(limits, Mapping) else (limits or Limits())
        self.repos_dir = repos_dir
        self.use_oracle_files = oracle_files
        self.oracle_window = oracle_window
        """None: whole oracle files (SWE-bench's oracle setting); N: windows of N lines around the gold hunks."""
        self.weights = weights
        self.effect_mode = effect_mode
        self._instances = list(instances) if instances is not None else None
        self.warm_pool = warm_pool
        self.strict_grading = strict_grading
        """Outcome reward: a patch the grading screen flags is unresolved (docs/grading.md); on by default."""
        self.shell = check_shell(shell, "shell")
        """How an episode's commands run (``core/shells.py``): ``persistent`` (default) or ``per-action``; an episode
        against a trajectory runs them as the trajectory's agent did (its ``shell``), and the prompt says which."""
        self.episode_shell = self.shell
        self.observation_space = spaces.Text(OBS_MAX_CHARS, min_length=0, charset=CHARSET)
        self.action_space = spaces.Text(ACTION_MAX_CHARS, min_length=0, charset=CHARSET)
        self.sandbox: DockerSandbox | None = None
        self.instance: Instance | None = None
        self._trajectory: Trajectory | None = None
        self._expert_step = 0
        self._t = 0
        self._deadline = 0.0
        self._patch = ""
        self.patch_notes: list[str] = []
        """What the last :meth:`patch` left out (binary files, files over the size cap), one note each."""
        self._done = False
        self._pristine = False  # nothing ran in the sandbox yet: a reset on the same instance reuses it
        self._expert_reward = ExpertStepReward(
            reward_mode, weights=weights, effect_mode=effect_mode, repos_dir=self._repos_path
        )  # srl/layered only; its sandboxed effect layer starts on first use

    @property
    def _repos_path(self) -> Path | None:
        return Path(self.repos_dir) if self.repos_dir else None

    # ---- episode lifecycle -------------------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = set(options) - {"instance_id", "trajectory", "step", "shell"}
        if unknown:
            raise ConfigError(
                f"reset options {sorted(unknown)} are unknown; use instance_id, trajectory, step, shell"
            )
        instances, instance_id = self._load_instances(), options.get("instance_id")
        if instance_id is None:
            instance = instances[int(self.np_random.integers(len(instances)))]
        else:
            instance = find_instance(instances, instance_id, self.dataset)
        trajectory, step = options.get("trajectory"), int(options.get("step", 0))
        if self.reward_mode != "outcome" and trajectory is None:
            raise ConfigError(f"reward_mode={self.reward_mode!r} needs reset options trajectory=… and step=…")
        if trajectory is not None and not 0 <= step < max(len(trajectory.steps), 1):
            raise ConfigError(f"step={step} is outside trajectory of {len(trajectory.steps)} steps")
        shell = episode_shell(options.get("shell"), trajectory, self.shell)
        if not (self._pristine and instance is self.instance and step == 0 and shell == self.episode_shell):
            self.close()
            self.sandbox = start_sandbox(instance, self.limits, self._repos_path, self.warm_pool, shell)
            self._pristine = True
        elif hasattr(self.sandbox, "restart_clock"):
            self.sandbox.restart_clock()  # a container nothing ran in is reused as is
        self.instance, self._trajectory, self._expert_step = instance, trajectory, step
        self.episode_shell = shell
        try:
            oracle = read_oracle_files(self.sandbox, instance, self.use_oracle_files, self.oracle_window)
            if trajectory is not None and step > 0:
                self._pristine = False
                restore(self.sandbox, expert_states(trajectory, instance, repos_dir=self._repos_path), step)
            self._patch, self.patch_notes = "", []
        except BaseException:
            self.close()
            raise
        self._t, self._done = 0, False
        self._deadline = time.monotonic() + self.limits.episode_timeout_s
        messages = reset_messages(instance, trajectory, step, oracle, shell)
        info = {"instance_id": instance.instance_id, "problem": instance.problem_statement}
        info |= {"oracle_files": oracle, "messages": messages, "shell": shell}
        return render_messages(messages), info

    def close(self) -> None:
        """Remove the episode's container (idempotent)."""
        sandbox, self.sandbox = self.sandbox, None
        self._pristine = False
        if sandbox is not None:
            sandbox.close()
        self._done = True

    # ---- stepping ----------------------------------------------------------------------------------------------
    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.sandbox is None or self.instance is None or self._done:
            raise gymnasium.error.ResetNeeded("SWEEnv.step() called outside an episode: call reset() first")
        t, self._t = self._t, self._t + 1
        action = Completion(action)  # parsed once: the reward below reuses the parse
        info: dict[str, Any] = {"instance_id": self.instance.instance_id, "step": t, "action": None}
        info |= {"format_error": None, "reward_components": {}, "exit_code": None, "timed_out": False}
        info["duration_s"] = 0.0
        if time.monotonic() >= self._deadline:
            return self._truncate("the episode's wall-clock budget was already spent", info)
        try:
            parsed = parse_output(action)
        except ActionFormatError as exc:
            info["format_error"], info["reward_components"] = str(exc), {"format": 0.0}
            obs = f"Format error ({exc}). Reply with <think>…</think> followed by exactly one bash command."
            return sanitize(obs), -1.0, False, False, info
        info["action"] = parsed.action
        try:
            if is_submit(parsed.action):
                return self._submit(action, info)
            self._pristine = False
            result = self._guarded(self.sandbox.run, parsed.action, self._command_timeout())
        except SandboxTimeout as exc:
            return self._truncate(str(exc), info)
        info |= {
            "exit_code": result.exit_code,
            "timed_out": result.timed_out,
            "duration_s": result.duration_s,
        }
        reward = self._step_reward(action, t, info)
        obs = format_observation(result, self.limits)
        if time.monotonic() >= self._deadline:
            info["truncation"] = "wall_clock"
            self._done = True
            info["patch"], info["patch_left_out"] = self.patch(), list(self.patch_notes)
            return obs, reward, False, True, info
        return obs, reward, False, False, info

    def _submit(self, text: str, info: dict[str, Any]) -> tuple[str, float, bool, bool, dict[str, Any]]:
        assert self.sandbox is not None and self.instance is not None
        info["patch"], info["patch_left_out"] = self.patch(), list(self.patch_notes)
        self._done = True
        if self.reward_mode != "outcome":
            reward = self._step_reward(text, info["step"], info)
            return "Submitted.", reward, True, False, info

        result = grade(self.instance, self._patch, repos_dir=self._repos_path, strict=self.strict_grading)
        if result.status == "error":
            raise GradingError(
                f"grading {self.instance.instance_id} failed (infra, not the patch): {result.log[-2000:]}"
            )
        resolved = result.status == "resolved"
        reason = getattr(result, "reason", "")
        info |= {"grade_status": result.status, "grade_reason": reason, "tests": dict(result.tests)}
        info["reward_components"] = {"outcome": float(resolved)}
        passed = sum(v == "PASSED" for v in result.tests.values())
        obs = f"Submitted. Grading: {result.status}{f' ({reason})' if reason else ''} ({passed} tests passed)"
        return sanitize(obs), float(resolved), True, False, info

    def _truncate(self, why: str, info: dict[str, Any]) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self._done = True
        info["truncation"] = "wall_clock"
        with contextlib.suppress(SandboxError):  # the sandbox's grace usually still allows the diff
            info["patch"], info["patch_left_out"] = self.patch(), list(self.patch_notes)
        budget = self.limits.episode_timeout_s
        return (
            sanitize(f"[episode truncated: wall-clock budget of {budget:g}s spent ({why})]"),
            0.0,
            False,
            True,
            info,
        )

    def patch(self) -> str:
        """The episode's patch now: the sandbox's text patch (binary files and files over
        ``Limits.patch_file_bytes`` left out, listed in ``patch_notes``) without build junk (``__pycache__``,
        ``*.egg-info``, ``build/``), as grading takes it. Computed on request (submit, truncation, the agent loop's
        end), over the sandbox's control shell: ``step`` never diffs."""
        if self.sandbox is None:
            return self._patch
        result = self._guarded(self.sandbox.patch)
        self._patch, self.patch_notes = clean_patch(result.text), list(result.left_out)
        if result.pristine:
            self.patch_notes.append(
                "(.git was deleted or broken: diffed against a pristine copy of the base commit)"
            )
        return self._patch

    def _command_timeout(self) -> float:
        return max(0.1, min(self.limits.command_timeout_s, self._deadline - time.monotonic()))

    def _guarded(self, fn: Any, *args: Any) -> Any:
        """Call a sandbox method; an infra failure (not the wall clock) closes the env before it propagates."""
        try:
            return fn(*args)
        except SandboxTimeout:
            raise
        except SandboxError as exc:
            where = f"instance {self.instance.instance_id if self.instance else '?'}, step {self._t - 1}"
            self.close()
            exc.add_note(f"SWEEnv ({where}): the env closed its sandbox; call reset() to start a new episode")
            raise

    def _step_reward(self, text: str, t: int, info: dict[str, Any]) -> float:
        """Step-wise reward (srl/layered) against the expert action ``step + t``; 0.0 in outcome mode."""
        if self.reward_mode == "outcome" or self._trajectory is None:
            return 0.0
        assert self.instance is not None
        k = self._expert_step + t
        return self._expert_reward.score(text, info["action"], self.instance, self._trajectory, k, info)

    # ---- helpers -----------------------------------------------------------------------------------------------
    def _load_instances(self) -> list[Instance]:
        if self._instances is None:
            self._instances = load_instances(self.dataset)
        if not self._instances:
            raise TaskError(f"dataset {self.dataset!r} holds no instances")
        return self._instances
