"""What every sandbox offers: run a command in a persistent shell, read/write files, diff the repo, close.

``diff()`` is binary-safe (expert state snapshots restore from it); ``patch()`` is the graded text patch.

*Where* commands run (a Docker container, a local directory) is the backend's business; callers see only this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from swe_srl.core.shells import PERSISTENT, check_shell
from swe_srl.errors import ConfigError

GRADING_NETWORK_ENV = "SWE_SRL_GRADING_NETWORK"
"""``1``: grading containers get a network (``tasks validate --grading-network``), as the official harness's have:
requests' httpbin.org tests and sphinx's linkcheck need one. Off by default (a patch gets no network)."""

ALLOW_UNLIMITED_ENV = "SWE_SRL_ALLOW_UNLIMITED_SANDBOXES"
"""``1``: sandboxes run even where the engine cannot enforce their memory/pids limits (``swe-srl
--allow-unlimited-sandboxes``; ``enforcement.py``); otherwise such a run is refused."""

TRUNCATION_MARKER = "\n[... output truncated by swe-srl: {dropped} bytes dropped ...]\n"


@dataclass(frozen=True)
class ExecResult:
    """The observation of one command: a failing or timed-out command is a result, not an exception."""

    output: str
    exit_code: int
    timed_out: bool = False
    truncated: bool = False
    duration_s: float = 0.0
    oom_killed: bool = False
    session_restarted: bool = False
    """The persistent shell died (``exit``, ``kill -9 $$``, ``kill -9 -1``, timeout kill) and a fresh one was started."""
    disk_exceeded: bool = False
    """The sandbox's writable layer went over ``Limits.disk`` (the command was stopped if it was still running)."""


@dataclass(frozen=True)
class Patch:
    """The worktree's diff against the base commit, and what was left out of it (SWE-bench text-diff rules)."""

    text: str
    left_out: tuple[str, ...] = ()
    """One note per file (or the whole diff) left out: ``"path (binary)"``, ``"path (over 1048576 bytes)"``."""
    pristine: bool = False
    """Computed against a pristine copy of the base commit (the episode's ``.git`` was deleted or broken)."""


def _parse_size(value: str | int, name: str) -> int:
    if isinstance(value, int):
        if value <= 0:
            raise ConfigError(
                f"Limits.{name}={value!r}: must be a positive number of bytes (or '512m', '2g')"
            )
        return value
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = str(value).strip().lower().removesuffix("b")
    try:
        if text and text[-1] in units:
            return int(float(text[:-1]) * units[text[-1]])
        return int(text)
    except ValueError:
        raise ConfigError(
            f"Limits.{name}={value!r}: not a size; use bytes or a suffix k/m/g like '512m'"
        ) from None


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandbox. Validated on construction; bad values raise ``ConfigError``."""

    memory: str = "2g"
    """Memory cap (swap included), e.g. ``512m``; an allocation beyond it is OOM-killed and reported."""
    cpus: float = 1.0
    """CPU share (``docker run --cpus``)."""
    pids: int = 256
    """Maximum processes in the container: a fork bomb hits this instead of the host."""
    network: bool = False
    """Allow network access (off by default; grading profile: :data:`GRADING_NETWORK_ENV`)."""
    command_timeout_s: float = 60.0
    """Default per-command timeout; the command is killed and the result has ``timed_out=True``."""
    episode_timeout_s: float = 1800.0
    """Wall-clock budget of the whole episode; past it every call raises ``SandboxTimeout``."""
    output_limit_bytes: int = 64_000
    """Observations longer than this are cut in the middle with a truncation marker."""
    disk: str = "2g"
    """Disk budget of the container's writable layer: a file-size rlimit in the shell (``ulimit -f``) and polling of
    the layer's size while a command runs; a command past it is stopped with an observation."""
    patch_file_bytes: int = 1 << 20
    """Files over this size are left out of the graded (text) patch, as binary files are (with a note)."""
    patch_limit_bytes: int = 32 << 20
    """A diff over this size is not read back: the text patch is left out entirely (with a note)."""
    patch_timeout_s: float = 120.0
    """Time budget of computing one diff."""

    def __post_init__(self) -> None:
        _parse_size(self.memory, "memory")
        _parse_size(self.disk, "disk")
        for name in ("cpus", "command_timeout_s", "episode_timeout_s", "patch_timeout_s"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"Limits.{name}={value!r}: must be a positive number")
        for name in ("pids", "output_limit_bytes", "patch_file_bytes", "patch_limit_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"Limits.{name}={value!r}: must be a positive integer")

    @property
    def memory_bytes(self) -> int:
        return _parse_size(self.memory, "memory")

    @property
    def disk_bytes(self) -> int:
        return _parse_size(self.disk, "disk")


def truncate_output(data: bytes, limit: int) -> tuple[str, bool]:
    """Decode ``data`` (invalid UTF-8 replaced) and keep head and tail within ``limit`` bytes."""
    if len(data) <= limit:
        return data.decode("utf-8", errors="replace"), False
    half = limit // 2
    dropped = len(data) - 2 * half
    text = (
        data[:half].decode("utf-8", errors="replace")
        + TRUNCATION_MARKER.format(dropped=dropped)
        + data[-half:].decode("utf-8", errors="replace")
    )
    return text, True


@runtime_checkable
class Sandbox(Protocol):
    """A place where an episode's commands run. ``close()`` is idempotent; use as a context manager."""

    def run(self, command: str, timeout: float | None = None) -> ExecResult: ...

    def read_file(self, path: str) -> bytes: ...

    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None: ...

    def diff(self) -> str: ...

    def patch(self) -> Patch: ...

    def close(self) -> None: ...

    def __enter__(self) -> Sandbox: ...

    def __exit__(self, *exc: object) -> None: ...


@dataclass
class SandboxSpec:
    """Everything needed to start a sandbox: the image, where the repo lives, and the limits."""

    image: str
    workdir: str = "/testbed"
    limits: Limits = field(default_factory=Limits)
    base_commit: str | None = None
    """Commit ``diff()`` compares against (``HEAD`` of the image's repo when None)."""
    env: dict[str, str] = field(default_factory=dict)
    run_id: str | None = None
    """Label grouping containers of one process/run (the janitor reaps labels of dead runs)."""
    labels: dict[str, str] = field(default_factory=dict)
    """Extra container labels (``sandbox.factory`` sets ``swe-srl.profile``); the janitor's own labels win."""
    shell: str = PERSISTENT
    """How ``run()`` runs a command (``core/shells.py``): ``persistent`` (one bash, state carries over) or
    ``per-action`` (a fresh bash from ``workdir`` with the session's initial environment each time)."""

    def __post_init__(self) -> None:
        check_shell(self.shell, "SandboxSpec.shell")
