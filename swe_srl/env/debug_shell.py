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
from swe_srl.core.shells import PER_ACTION, PERSISTENT
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


PER_ACTION_LOOP = (
    "__home=$PWD; __env=(); while IFS= read -r -d '' __v; do __env+=(\"$__v\"); done < <(env -0); "
    'while IFS= read -r -e -p "$SWE_SRL_PROMPT" __line; do [ "$__line" = exit ] && break; history -s "$__line"; '
    '( cd -- "$__home" && exec env -i "${__env[@]}" bash --noprofile --norc -c "$__line" ); done; echo'
)
"""The per-action shell: each line read (readline, history) runs as a fresh bash from the starting directory with
the starting environment, as a per-action trajectory's agent ran its actions; ``exit`` or Ctrl-D leaves."""


def exec_command(container_id: str, cwd: str, ps1: str, *, tty: bool, shell: str = PERSISTENT) -> list[str]:
    """The ``docker exec`` (``podman --remote exec``) argv of the interactive shell (``shell``: the trajectory's)."""
    flags = ["-it"] if tty else ["-i"]
    if shell == PER_ACTION:
        prompt_text = ps1.replace("\\w", cwd).replace("\\$", "$").replace(") ", ", per-action) ", 1)
        env = ["-e", f"SWE_SRL_PROMPT={prompt_text}", "-e", "TERM=xterm"]
        return [*engine_cli(), "exec", *flags, "-w", cwd, *env, container_id, "bash", "--norc", "--noprofile",
                "-c", PER_ACTION_LOOP]  # fmt: skip
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
        shell = trajectory.shell if trajectory is not None else PERSISTENT
        with open_sandbox(instance, profile="shell", repos_dir=repos_dir, shell=shell) as sandbox:
            cwd = WORKDIR
            if state is not None:
                restore(sandbox, state, step or 0)
                cwd = cwd_of(sandbox)
            if sandbox.container_id is None:
                raise SandboxError(f"the sandbox for {instance.instance_id} has no container id")
            ps1, tty = prompt(instance.instance_id, step), sys.stdin.isatty()
            argv = exec_command(sandbox.container_id, cwd, ps1, tty=tty, shell=shell)
            how = (
                f"; each command runs as a fresh bash from {cwd} (per-action)" if shell == PER_ACTION else ""
            )
            print(
                f"swe-srl shell: {instance.instance_id} in container {sandbox.container_id[:12]}{how}; "
                "`exit` to leave"
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
