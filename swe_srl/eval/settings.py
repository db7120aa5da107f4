"""The settings of one evaluation run: the policy, its episodes' limits, the oracle setting and the protocol.

:class:`EvalSettings` is checked when it is made (one clear error before any work) and shipped with every task of
the run, so it stays picklable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from swe_srl.agent.policies import default_max_steps
from swe_srl.agent.served import MAX_CONCURRENT_REQUESTS
from swe_srl.core.shells import PERSISTENT, check_shell
from swe_srl.errors import ConfigError
from swe_srl.eval.protocols.oneshot import REPAIR_INPUT_TOKENS, check_protocol
from swe_srl.trajectories.oracle import oracle_setting


@dataclass(frozen=True)
class EvalSettings:
    """What one evaluation run does to each instance (picklable: shipped with every task)."""

    policy: str
    """``gold | empty | replay:TRAJ.jsonl | hf:PATH_OR_ID | openai | predictions:FILE``."""
    base_url: str | None = None
    model: str | None = None
    max_concurrent_requests: int = MAX_CONCURRENT_REQUESTS
    """``openai``: requests in flight to the server from this machine at most (SWE-RL's ``max_concurrent_requests``)."""
    max_steps: int | None = None
    """Policy calls per episode; None: ``agent.policies.default_max_steps`` (50; a replay's longest trajectory)."""
    episode_timeout_s: float = 1800.0
    max_new_tokens: int = 1024
    temperature: float = 0.0
    oracle_files: bool = False
    oracle_window: int | None = None
    """With ``oracle_files``: None keeps whole files (SWE-bench's oracle setting); N: windows of N context lines."""
    shell: str = PERSISTENT
    """``agent``: how episodes run commands (``core/shells.py``): ``persistent`` | ``per-action``; a replay's
    trajectories run as their own agent ran them."""
    repos_dir: str | None = None
    grade_timeout_s: float = 1800.0
    direct: bool = False
    """gold/empty: grade ``instance.patch`` / ``""`` directly, without an episode."""
    protocol: str = "agent"
    """``agent`` (episodes in SWEEnv) | ``oracle-edit`` | ``agentless`` (one generation: eval/protocols)."""
    candidates: int = 1
    """One-generation protocols: candidates per instance, reranked by majority."""
    edit_rules: str = "agentless"
    """One-generation protocols: ``agentless`` (Agentless-mini's post-processing) | ``strict`` (whole lines,
    exactly one match, new files may be created)."""
    no_grade: bool = False
    """One-generation protocols: write the predictions and the protocol records, grade nothing (no Docker)."""
    prompt_templates: tuple[tuple[str, str], ...] = ()
    """One-generation protocols: (kind, template text) pairs replacing our prompt wording (``--prompt-template``)."""
    repair_input_tokens: int = REPAIR_INPUT_TOKENS
    """One-generation protocols: the input budget of the files shown in a repair prompt."""
    tokenizer: str | None = None
    """One-generation protocols: the tokenizer (name or path) that counts the input budget (``--tokenizer``); None:
    the policy's own, a served model's when it loads from disk, else an estimate (``eval/protocols/budget.py``)."""
    rerank: str = "swe-rl"
    """One-generation protocols, ``candidates`` > 1: the reranking key, ``swe-rl`` (SWE-RL's normalized patch) or
    ``ours`` (the edited files' AST)."""
    view_for: Callable[[Any], Any] | None = None
    """``hf:`` policies: their view from their tokenizer (``HFPolicy``'s ``view_for``; the CLI passes the tiny
    model's, which is plain for every other model). A module-level function, so that the settings stay picklable."""

    def __post_init__(self) -> None:
        if self.direct and self.policy not in ("gold", "empty"):
            raise ConfigError(f"direct patch grading is for --policy gold|empty, not {self.policy!r}")
        if self.max_steps is None:
            object.__setattr__(self, "max_steps", default_max_steps(self.policy))
        if self.max_steps < 1:
            raise ConfigError(f"max_steps={self.max_steps}: need at least one step")
        check_shell(self.shell, "--shell")
        if self.max_concurrent_requests < 1:
            raise ConfigError(f"--max-requests {self.max_concurrent_requests}: need at least 1")
        check_protocol(self)

    @property
    def oracle(self) -> str:
        """The oracle setting reports name: ``none | whole | window:N``."""
        if self.protocol != "agent":
            return "whole" if self.protocol == "oracle-edit" else "none"
        return oracle_setting(self.oracle_files, self.oracle_window)

    @property
    def in_process_model(self) -> bool:
        """An HF model loaded in the worker: threads share it instead of one copy per process."""
        return self.policy.startswith("hf:")
