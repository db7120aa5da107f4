"""Limits are enforced or refused, never silently dropped.

Rootless Podman on cgroup v1 (and rootless Docker there) accepts a container's memory and pids limits and ignores
them: a fork bomb in a "limited" sandbox then reaches the whole machine. So, before the first sandbox of a process,
the engine is asked which controllers it honours (:func:`engine_facts`: Podman's ``/libpod/info``, Docker's
``/info``; cached per process). When memory or pids cannot be enforced the run is refused (``LimitsUnenforced``,
one line naming the cause and the fix) unless ``$SWE_SRL_ALLOW_UNLIMITED_SANDBOXES=1``
(``swe-srl --allow-unlimited-sandboxes``), which :func:`unlimited_note` then reports.

Each sandbox, once started, also reads its own cgroup from inside (:data:`CGROUP_SCRIPT`: ``memory.max`` or
``memory.limit_in_bytes``, ``pids.max``) and stops the run when they do not hold its limits (:func:`check_inside`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from swe_srl.errors import LimitsUnenforced
from swe_srl.infra.engine import docker_client, engine_name, libpod_info
from swe_srl.infra.sandbox.base import ALLOW_UNLIMITED_ENV as ALLOW_ENV
from swe_srl.infra.sandbox.base import Limits

NEEDED = ("memory", "pids")
FIX = (
    "run on cgroup v2 with the memory and pids controllers delegated to this user (systemd: Delegate=memory pids) "
    "or on root Podman/Docker, or accept sandboxes without these limits with --allow-unlimited-sandboxes "
    f"({ALLOW_ENV}=1)"
)
CGROUP_SCRIPT = (
    "m=; p=; for f in /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes; do "
    '[ -r "$f" ] && { read -r m < "$f"; break; }; done; '
    "for f in /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids/pids.max; do "
    '[ -r "$f" ] && { read -r p < "$f"; break; }; done; echo "__swesrl_limits ${m:-none} ${p:-none}"'
)
"""Prints ``__swesrl_limits <memory limit> <pids limit>`` as the container's cgroup holds them (``none``: unreadable)."""
PAGE = 4096


@dataclass(frozen=True)
class EngineFacts:
    """What the engine says about the limits it can enforce."""

    engine: str
    rootless: bool
    cgroup_version: str
    controllers: tuple[str, ...]
    """The resource controllers the engine honours for containers (``memory``, ``pids``, ``cpu``...)."""

    def missing(self) -> list[str]:
        """The needed controllers (:data:`NEEDED`) it cannot enforce."""
        return [name for name in NEEDED if name not in self.controllers]

    def refusal(self) -> str:
        """The one-line refusal: the cause and the fix."""
        mode = "rootless" if self.rootless else "root"
        return (
            f"{self.engine} ({mode}, cgroup {self.cgroup_version}) cannot enforce the sandboxes' "
            f"{' and '.join(self.missing())} limits (it would accept and ignore them); fix: {FIX}"
        )


def podman_facts(info: dict) -> EngineFacts:
    """From Podman's ``/libpod/info`` (pure function)."""
    host = info.get("host") or {}
    return EngineFacts("podman", bool((host.get("security") or {}).get("rootless")),
                       str(host.get("cgroupVersion") or "?"), tuple(host.get("cgroupControllers") or ()))  # fmt: skip


def docker_facts(info: dict) -> EngineFacts:
    """From Docker's ``/info`` (pure function): ``MemoryLimit`` / ``PidsLimit`` say what it enforces."""
    rootless = any("rootless" in str(option) for option in info.get("SecurityOptions") or ())
    controllers = [name for name, key in (("memory", "MemoryLimit"), ("pids", "PidsLimit")) if info.get(key)]
    if info.get("CpuCfsQuota"):
        controllers.append("cpu")
    return EngineFacts("docker", rootless, f"v{info.get('CgroupVersion') or '1'}", tuple(controllers))


@lru_cache(maxsize=1)
def engine_facts() -> EngineFacts:
    """The engine in use, asked once per process."""
    if engine_name() == "podman":
        return podman_facts(libpod_info())
    return docker_facts(docker_client().info())


def allow_unlimited() -> bool:
    """``$SWE_SRL_ALLOW_UNLIMITED_SANDBOXES`` is ``1``."""
    return os.environ.get(ALLOW_ENV, "") == "1"


def require_enforced(facts: EngineFacts | None = None) -> list[str]:
    """Refuse (``LimitsUnenforced``) when memory or pids limits cannot be enforced, unless allowed; return the
    limits that are not enforced (empty unless allowed). ``facts``: the engine in use's when not given."""
    facts = facts or engine_facts()
    missing = facts.missing()
    if missing and not allow_unlimited():
        raise LimitsUnenforced(facts.refusal())
    return missing


def unlimited_note(facts: EngineFacts | None = None) -> str | None:
    """What a report or record carries when this process runs sandboxes without some limits; None when all hold.
    Asks the engine (unless ``facts`` are given) only when unlimited sandboxes are allowed."""
    if not allow_unlimited():
        return None
    missing = (facts or engine_facts()).missing()
    return f"unlimited sandboxes: {' and '.join(missing)} not enforced ({ALLOW_ENV}=1)" if missing else None


def limits_mismatch(limits: Limits, memory: str, pids: str) -> str | None:
    """What of ``limits`` the cgroup values read inside a container (``CGROUP_SCRIPT``) fail to hold (pure)."""
    wrong = []
    if not memory.isdigit() or abs(int(memory) - limits.memory_bytes) >= PAGE:
        wrong.append(f"memory limit {memory} instead of {limits.memory_bytes}")
    if not pids.isdigit() or int(pids) != limits.pids:
        wrong.append(f"pids limit {pids} instead of {limits.pids}")
    return "; ".join(wrong) or None


class _Controlled(Protocol):
    container_id: str | None

    def control_script(self, script: str, limit: int, timeout: float): ...


def check_inside(sandbox: _Controlled, limits: Limits, timeout: float = 20.0) -> None:
    """Read the container's cgroup from inside; ``LimitsUnenforced`` when it does not hold ``limits``."""
    reply = sandbox.control_script(CGROUP_SCRIPT, 4096, timeout)
    words = reply.data.decode(errors="replace").split() if reply is not None else []
    at = words.index("__swesrl_limits") if "__swesrl_limits" in words else -1
    memory, pids = (words[at + 1 : at + 3] + ["none", "none"])[:2] if at >= 0 else ("none", "none")
    if wrong := limits_mismatch(limits, memory, pids):
        raise LimitsUnenforced(
            f"container {(sandbox.container_id or '?')[:12]} does not hold its limits ({wrong}): the engine "
            f"accepted them and did not apply them; fix: {FIX}"
        )
