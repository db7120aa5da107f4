"""Where commands run. ``base`` is the protocol; ``docker`` the container backend; ``factory`` the named profiles
every sandbox is made from; ``pool`` parallel sandboxes."""

from swe_srl.infra.sandbox.base import ExecResult, Limits, Sandbox, SandboxSpec

__all__ = ["ExecResult", "Limits", "Sandbox", "SandboxSpec"]
