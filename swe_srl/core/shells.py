"""How an agent's actions run: shell semantics, a property of a trajectory that the sandbox honours.

* ``persistent``: one bash for the whole episode; a ``cd``, ``export``, ``source`` or shell variable carries over to
  the next action (SWE-agent and SWE-smith through SWE-ReX's bash session, OpenHands and SWE-Gym through OpenHands'
  tmux bash session, nebius' SWE-agent runs, our own episodes by default).
* ``per-action``: every action is a fresh bash process started in the initial working directory with the initial
  environment, so nothing an action sets outlives it (mini-swe-agent: ``docker exec -w /testbed … bash -lc
  ACTION`` per action, ``environments/docker.py: execute``).
"""

from __future__ import annotations

from swe_srl.errors import ConfigError

PERSISTENT = "persistent"
PER_ACTION = "per-action"
SHELL_MODES = (PERSISTENT, PER_ACTION)


def check_shell(value: object, where: str = "shell") -> str:
    """``value`` when it is a shell mode, else ``ConfigError`` naming ``where``, the value and the choices."""
    if value not in SHELL_MODES:
        raise ConfigError(f"{where}={value!r}: choose one of {', '.join(SHELL_MODES)}")
    return str(value)
