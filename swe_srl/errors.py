"""The error hierarchy. Every error the project raises on purpose is a ``SweSrlError``.

Errors also inherit the matching builtin so callers can catch either (``SandboxTimeout`` is a ``TimeoutError``).
Messages name the offending value and, where there is one, the fix.
"""


class SweSrlError(Exception):
    """Root of every error swe-srl raises on purpose."""


class ConfigError(SweSrlError, ValueError):
    """An invalid option or config value (unknown key, value out of range)."""


class SandboxError(SweSrlError, RuntimeError):
    """Infrastructure failure where commands run: daemon down, image missing, container died."""


class DockerUnavailable(SandboxError):
    """No Docker engine answers."""


class LimitsUnenforced(SandboxError):
    """The engine cannot (or did not) enforce a sandbox's memory or pids limit: the run is refused."""


class ImageNotFound(SandboxError, LookupError):
    """An image tag that does not exist locally and cannot be built or pulled."""


class ImageBuildError(SandboxError):
    """An image recipe failed to build."""


class ContainerDied(SandboxError):
    """The episode's container stopped or vanished while in use."""


class SandboxTimeout(SandboxError, TimeoutError):
    """The episode's wall-clock budget is spent."""


class TaskError(SweSrlError, ValueError):
    """A malformed task record or an unknown dataset/instance."""


class TrajectoryFormatError(SweSrlError, ValueError):
    """A trajectory record that no importer understands, or that is malformed."""


class ActionFormatError(SweSrlError, ValueError):
    """Model output that breaks the ``<think>…</think>`` + one action format."""

    def __init__(self, rule: str, detail: str = "") -> None:
        self.rule = rule
        super().__init__(f"{rule}: {detail}" if detail else rule)


class GradingError(SweSrlError):
    """Grading could not run (infra), as opposed to a patch that is wrong."""


class TrainingError(SweSrlError):
    """Training cannot start or continue (bad model path, empty dataset, ...)."""


class PolicyError(SweSrlError, RuntimeError):
    """A policy cannot answer: unknown spec, unreachable server, model that fails to load, script exhausted."""


class ContextOverflow(PolicyError):
    """The prompt does not fit the model's context (the server said so: HTTP 400/413 or its "maximum context
    length" message). One-generation protocols turn it into an empty patch, not an error."""

    def __init__(
        self, message: str, prompt_tokens: int | None = None, context_tokens: int | None = None
    ) -> None:
        self.prompt_tokens, self.context_tokens = prompt_tokens, context_tokens
        super().__init__(message)


class ExecutorError(SweSrlError, RuntimeError):
    """A task could not be run to completion by the executor (worker lost too often, no start slot, no cluster)."""
