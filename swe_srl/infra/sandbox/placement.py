"""Where sandboxes run: ``local`` (this process's container engine, the default) or ``ray[:ADDRESS]`` (Ray actors on
the cluster's sandbox nodes, ``remote.py``).

One setting for every place a sandbox is made (``factory.py``: episodes, grading, the effect layer, expert states):
``$SWE_SRL_SANDBOXES``, which the CLI's ``--sandboxes`` and the training config's ``sandboxes`` key set. ``ray``
alone is ``ray:auto`` (the cluster of this machine, ``ray start`` / ``RAY_ADDRESS``); an address is what ``--ray``
takes (``host:6379``, ``ray://host:10001``).
"""

from __future__ import annotations

import os

from swe_srl.errors import ConfigError

SANDBOXES_ENV = "SWE_SRL_SANDBOXES"
SANDBOX_RESOURCE = "swe_srl_sandbox"
"""The Ray custom resource a sandbox node declares (``swe-srl worker --sandboxes N``); each sandbox takes one."""
NODE_RESOURCE = "swe_srl_sandbox_node"
NODE_TASKS = 1000
"""A sandbox node also declares ``NODE_RESOURCE: NODE_TASKS``: a task that needs a node's engine beside sandboxes
(grading a submitted episode, an image's executables) takes one unit of it, not a sandbox slot, so an episode that
holds its slot while its patch is graded never waits for a second one (N such episodes on N slots would wait
forever)."""
SANDBOXES_HELP = (
    "local | ray | ray:ADDRESS: this machine's engine, or sandbox nodes (`swe-srl worker`); "
    "or $SWE_SRL_SANDBOXES"
)
CHOICES = "local, ray, ray:ADDRESS (e.g. ray:10.0.0.1:6379 or ray:ray://head:10001)"


def parse_sandboxes(value: str | None, *, where: str = "--sandboxes") -> str | None:
    """The Ray address of ``value`` (``auto`` for ``ray``), or None for ``local``; ``ConfigError`` naming the
    choices for anything else."""
    text = (value or "local").strip()
    if text == "local":
        return None
    if text == "ray":
        return "auto"
    kind, sep, address = text.partition(":")
    if kind == "ray" and sep and address and (address == "auto" or ":" in address):
        return address
    raise ConfigError(f"{where} {value!r}: choose one of {CHOICES}")


def sandbox_address() -> str | None:
    """The Ray address sandboxes are placed on, or None when they run on this process's engine."""
    return parse_sandboxes(os.environ.get(SANDBOXES_ENV), where=f"${SANDBOXES_ENV}")


def select_sandboxes(value: str | None) -> None:
    """The CLI's ``--sandboxes`` (None: ``$SWE_SRL_SANDBOXES`` or ``local``), checked before any work, then kept in
    ``$SWE_SRL_SANDBOXES`` for this process and the workers it spawns."""
    if value is None:
        sandbox_address()  # a bad environment value is reported now, not at the first sandbox
        return
    parse_sandboxes(value)
    os.environ[SANDBOXES_ENV] = value.strip()
