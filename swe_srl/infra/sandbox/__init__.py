"""Where commands run. ``base`` is the protocol; ``docker`` the container backend; ``pool`` parallel sandboxes."""

from swe_srl.infra.sandbox.base import ExecResult, Limits, Sandbox, SandboxSpec

__all__ = ["ExecResult", "Limits", "Sandbox", "SandboxSpec"]
