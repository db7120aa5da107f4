"""Policies the agent loop runs: one interface over scripted, local HF and served models.

A policy sees the chat messages of the training prompt format (``swe_srl.core.prompts.build_messages``) and answers with
the training output format: ``<think>…</think>`` then one bash action. ``reset(instance)`` starts each episode. A policy
may also answer several conversations at once (``generate_batch``, e.g. one batched ``generate`` of a local model):
the lock-step driver (``swe_srl.agent.loop.run_lockstep``) asks it once per turn for all episodes it serves.

The gold script (apply the gold patch through the shell, submit) lives here once: ``GoldPolicy`` of the evaluation and
the outputs of ``swe-srl env demo`` (:func:`gold_patch_outputs`) write the patch with the same heredoc.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from swe_srl.agent.models import HFPolicy, Messages
from swe_srl.agent.served import MAX_CONCURRENT_REQUESTS, OpenAIPolicy
from swe_srl.core.actions import SUBMIT, format_output, is_submit
from swe_srl.errors import ConfigError, PolicyError
from swe_srl.trajectories.schema import read_jsonl

if TYPE_CHECKING:
    from swe_srl.benchmark.instances import Instance
    from swe_srl.trajectories.schema import Trajectory

POLICY_SPECS = "gold | empty | replay:TRAJ.jsonl | hf:PATH_OR_ID | openai | predictions:FILE"
DEFAULT_MAX_STEPS = 50
"""Policy calls per episode when none are given (a replay's: its longest script, :func:`default_max_steps`)."""
HEREDOC_EOF = "SWE_SRL_EOF"
GOLD_APPLY = "git apply --verbose --whitespace=nowarn"


@runtime_checkable
class Policy(Protocol):
    """Maps the conversation so far to the next model output (``<think>…</think>`` + action).

    Optional: ``generate_batch(batch: Sequence[Messages]) -> list[str]``, one output per conversation (see
    :func:`batch_generate`); policies without it are asked one conversation at a time.
    """

    name: str

    def reset(self, instance: Instance) -> None: ...

    def generate(self, messages: Messages) -> str: ...


def batch_generate(policy: Policy, batch: Sequence[Messages]) -> list[str]:
    """Outputs of ``policy`` for several conversations: its ``generate_batch`` when it has one, else one by one."""
    if len(batch) > 1 and callable(getattr(policy, "generate_batch", None)):
        outputs = list(policy.generate_batch(batch))  # type: ignore[attr-defined]
        if len(outputs) != len(batch):
            raise PolicyError(
                f"policy {policy.name!r} answered {len(outputs)} outputs for {len(batch)} prompts"
            )
        return outputs
    return [policy.generate(messages) for messages in batch]


@dataclass
class FunctionPolicy:
    """A plain function of the messages as a policy (stateless: ``reset`` does nothing)."""

    fn: Callable[[Messages], str]
    name: str = "function"

    def reset(self, instance: Instance) -> None:
        pass

    def generate(self, messages: Messages) -> str:
        return self.fn(messages)


def as_policy(policy: Policy | Callable[[Messages], str]) -> Policy:
    """A policy as is; a function ``messages -> output`` wrapped in :class:`FunctionPolicy`."""
    if isinstance(policy, Policy):
        return policy
    if callable(policy):
        return FunctionPolicy(policy, getattr(policy, "__name__", "function"))
    raise ConfigError(f"{policy!r} is neither a Policy nor a function of the messages")


@dataclass
class ScriptedPolicy:
    """Answers with fixed outputs in order; raises ``PolicyError`` when it runs out of script.

    ``reset`` rewinds the script, so one instance can serve several episodes.
    """

    outputs: Sequence[str]
    name: str = "scripted"
    calls: int = field(default=0, init=False)

    def reset(self, instance: Instance) -> None:
        self.calls = 0

    def generate(self, messages: Messages) -> str:
        if self.calls >= len(self.outputs):
            raise PolicyError(
                f"policy {self.name!r} ran out of script after {len(self.outputs)} outputs "
                "(the episode needs more steps than were scripted; end the script with 'submit')"
            )
        self.calls += 1
        return self.outputs[self.calls - 1]


def heredoc_stdin(command: str, text: str) -> str:
    """A bash command feeding ``text`` byte-exactly to ``command``'s stdin: a quoted heredoc, or base64 when the
    text could end the heredoc or break the action format (a ``` fence)."""
    if not text.endswith("\n"):
        text += "\n"
    if HEREDOC_EOF in text or "```" in text:
        encoded = base64.b64encode(text.encode()).decode()
        return f"echo {encoded} | base64 -d | {command}"
    return f"{command} <<'{HEREDOC_EOF}'\n{text}{HEREDOC_EOF}"


def gold_apply(patch: str) -> str:
    """The action applying ``patch`` in the repository (``git apply`` reading the patch from a heredoc)."""
    return heredoc_stdin(GOLD_APPLY, patch)


def gold_script(instance: Instance) -> list[str]:
    """The outputs of the gold policy: apply the gold patch, submit."""
    return _gold(instance.patch)


def _gold(patch: str) -> list[str]:
    return [
        format_output("Apply the reference fix.", gold_apply(patch)),
        format_output("The fix is applied; submit it.", SUBMIT),
    ]


def gold_patch_outputs(patch: str) -> list[str]:
    """The gold script of ``swe-srl env demo``: look, apply the patch, run the tests, submit."""
    look = format_output("Look at the repository first.", "git status --short && ls")
    test = "PYTHONDONTWRITEBYTECODE=1 python -m pytest -q -p no:cacheprovider 2>&1 | tail -n 5"
    apply, submit = _gold(patch)
    return [look, apply, format_output("Run the test suite.", test), submit]


class GoldPolicy(ScriptedPolicy):
    """Applies each instance's gold patch through the shell, then submits (an upper bound for the harness)."""

    def __init__(self) -> None:
        super().__init__(outputs=[], name="gold")

    def reset(self, instance: Instance) -> None:
        self.outputs = gold_script(instance)
        self.calls = 0


class EmptyPolicy(ScriptedPolicy):
    """Submits at once: an empty patch (a lower bound)."""

    def __init__(self) -> None:
        super().__init__(outputs=[format_output("Submit without changes.", SUBMIT)], name="empty")


class ReplayPolicy(ScriptedPolicy):
    """Replays the actions of recorded trajectories (one per instance id), then submits.

    Raises ``PolicyError`` for an instance without a trajectory and when the episode outlives the script.
    """

    def __init__(self, trajectories: Sequence[Trajectory], *, name: str = "replay", auto_submit: bool = True):
        super().__init__(outputs=[], name=name)
        self.trajectories = {t.instance_id: t for t in trajectories}
        self.auto_submit = auto_submit

    @classmethod
    def from_file(cls, path: Path, **kwargs: Any) -> ReplayPolicy:

        _require_replay_file(path)
        return cls(list(read_jsonl(Path(path))), name=f"replay:{Path(path).name}", **kwargs)

    def reset(self, instance: Instance) -> None:
        traj = self.trajectories.get(instance.instance_id)
        if traj is None:
            known = ", ".join(sorted(self.trajectories)[:5]) or "none"
            raise PolicyError(
                f"policy {self.name!r} has no trajectory for instance {instance.instance_id!r} "
                f"(it has: {known}); pass --instances to restrict the run"
            )
        self.outputs = self.script(traj)
        self.calls = 0

    def script(self, traj: Trajectory) -> list[str]:
        """The outputs that replay ``traj``: its steps, then ``submit`` (``auto_submit``) unless it ends with one."""
        outputs = [format_output(s.thought or "(replayed step)", s.action) for s in traj.steps]
        if self.auto_submit and not (traj.steps and is_submit(traj.steps[-1].action)):
            outputs.append(format_output("Submit the replayed work.", SUBMIT))
        return outputs

    def shell_for(self, instance_id: str) -> str | None:
        """How the trajectory of ``instance_id`` ran its actions (``Trajectory.shell``): the episode runs them so."""
        traj = self.trajectories.get(instance_id)
        return traj.shell if traj is not None else None

    @property
    def longest(self) -> int:
        """Policy calls the longest trajectory's replay takes (its submit included)."""
        return max((len(self.script(t)) for t in self.trajectories.values()), default=0)


def _require_replay_file(path: str | Path) -> None:
    if not Path(path).expanduser().is_file():
        raise PolicyError(f"replay trajectory file {str(path)!r} does not exist (give a native JSONL file)")


def default_max_steps(spec: str) -> int:
    """Policy calls per episode for ``spec`` when none are given: ``replay:FILE`` replays whole trajectories (its
    longest script, submit included), any other policy gets :data:`DEFAULT_MAX_STEPS`."""
    kind, _, arg = spec.partition(":")
    if kind == "replay" and arg and Path(arg).expanduser().is_file():
        return max(1, ReplayPolicy.from_file(Path(arg).expanduser()).longest)
    return DEFAULT_MAX_STEPS


def check_model_ref(ref: str, option: str) -> None:
    """``ref`` names a saved model directory, or (no path) a hub id ``org/name``; else ``PolicyError`` naming
    ``option`` (``--model``, ``policy 'hf:…'``). Nothing is loaded."""
    path = Path(ref).expanduser()
    if path.exists():
        if not (path / "config.json").is_file() and not (path / "adapter_config.json").is_file():
            raise PolicyError(f"{option}: {str(path)!r} holds no saved model (no config.json)")
        return
    if ref.startswith((".", "/", "~")) or ref.count("/") != 1 or ref.endswith("/"):
        raise PolicyError(
            f"{option}: model path {str(path)!r} does not exist (give a saved model directory "
            "or a hub id like org/name)"
        )


def check_policy_spec(spec: str, *, base_url: str | None = None, model: str | None = None) -> None:
    """Reject a bad spec before any work: unknown kind, missing argument, missing file or model directory.

    Cheap (no model is loaded, no server is called). ``predictions:FILE`` is no agent policy: the evaluation reads
    the file itself (``swe_srl.eval.predictions``) and grades each patch without an episode.
    """
    kind, _, arg = spec.partition(":")
    if kind in ("gold", "empty") and not arg:
        return
    if kind == "replay" and arg:
        return _require_replay_file(arg)
    if kind == "hf" and arg:
        return check_model_ref(arg, f"policy 'hf:{arg}'")
    if kind == "predictions" and arg:
        return
    if kind == "openai":
        if not base_url or not (model or arg):
            raise PolicyError(
                "policy 'openai' needs --base-url URL and --model NAME (e.g. http://localhost:8000/v1)"
            )
        return
    raise PolicyError(f"unknown policy {spec!r}; expected one of: {POLICY_SPECS}")


def make_policy(
    spec: str,
    *,
    base_url: str | None = None,
    model: str | None = None,
    max_new_tokens: int = 1024,
    temperature: float = 0.0,
    view_for: Callable[[Any], Any] | None = None,
    max_concurrent_requests: int = MAX_CONCURRENT_REQUESTS,
) -> Policy:
    """Build a policy from its CLI spec (:data:`POLICY_SPECS`; checked by :func:`check_policy_spec`); ``view_for``:
    an ``hf:`` policy's view (:class:`~swe_srl.agent.models.HFPolicy`); ``max_concurrent_requests``: an ``openai``
    policy's bound on the requests this machine has in flight to its server."""
    check_policy_spec(spec, base_url=base_url, model=model)
    kind, _, arg = spec.partition(":")
    if kind == "gold":
        return GoldPolicy()
    if kind == "empty":
        return EmptyPolicy()
    if kind == "replay":
        return ReplayPolicy.from_file(Path(arg))
    if kind == "hf":
        return HFPolicy(arg, max_new_tokens=max_new_tokens, temperature=temperature, view_for=view_for)
    if kind == "openai":
        return OpenAIPolicy(base_url or "", model or arg, max_tokens=max_new_tokens, temperature=temperature,
                            max_concurrent=max_concurrent_requests)  # fmt: skip
    raise PolicyError(f"policy {spec!r} grades a predictions file directly; it runs no agent episode")
