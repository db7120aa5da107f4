"""An interactive bash inside an episode's container, optionally at the expert state before step K.

The container is started through the same sandbox the env uses, restored, then handed to ``docker exec -it``;
it is removed when the shell exits, on Ctrl-C, and on SIGTERM/SIGHUP (a closed terminal).
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from swe_srl.benchmark.instances import Instance
from swe_srl.errors import SandboxError
from swe_srl.infra.engine import engine_cli
from swe_srl.infra.sandbox.factory import open_sandbox
from swe_srl.trajectories.expert_state import WORKDIR, cwd_of, expert_states, restore
from swe_srl.trajectories.schema import Trajectory


def prompt(instance_id: str, step: int | None) -> str:
    """The PS1 that says where you are: instance, expert step, cwd."""
    where = f" step {step}" if step is not None else ""
    return f"(swe-srl {instance_id}{where}) \\w\\$ "


def _raise_exit(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def exec_command(container_id: str, cwd: str, ps1: str, *, tty: bool) -> list[str]:
    """The ``docker exec`` (``podman --remote exec``) argv of the interactive shell."""
    flags = ["-it"] if tty else ["-i"]
    bash = ["bash", "--norc", "--noprofile", "-i"]
    env = ["-e", f"PS1={ps1}", "-e", "TERM=xterm"]
    return [*engine_cli(), "exec", *flags, "-w", cwd, *env, container_id, *bash]


def open_shell(
    instance: Instance,
    *,
    trajectory: Trajectory | None = None,
    step: int | None = None,
    repos_dir: Path | None = None,
) -> int:
    """Run an interactive shell in a fresh container of ``instance``; returns the shell's exit code."""

    if step is not None and trajectory is None:
        raise SandboxError("--step needs --trajectory: the expert state comes from a trajectory")
    state = expert_states(trajectory, instance, repos_dir=repos_dir) if trajectory is not None else None
    previous = {sig: signal.signal(sig, _raise_exit) for sig in (signal.SIGTERM, signal.SIGHUP)}
    previous[signal.SIGINT] = signal.getsignal(signal.SIGINT)
    try:
        with open_sandbox(instance, profile="shell", repos_dir=repos_dir) as sandbox:
            cwd = WORKDIR
            if state is not None:
                restore(sandbox, state, step or 0)
                cwd = cwd_of(sandbox)
            if sandbox.container_id is None:
                raise SandboxError(f"the sandbox for {instance.instance_id} has no container id")
            argv = exec_command(
                sandbox.container_id, cwd, prompt(instance.instance_id, step), tty=sys.stdin.isatty()
            )
            print(
                f"swe-srl shell: {instance.instance_id} in container {sandbox.container_id[:12]}; `exit` to leave"
            )
            try:
                return subprocess.call(argv)
            except KeyboardInterrupt:
                return 130
            finally:  # the container is removed on the way out: no signal may cut that short
                for sig in previous:
                    signal.signal(sig, signal.SIG_IGN)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
