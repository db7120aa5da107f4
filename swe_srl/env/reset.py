"""What :meth:`SWEEnv.reset` sets up for an episode: the task asked for, its sandbox, the oracle files and the prompt.

The sandbox is started here (or taken from a warm pool) with the env's limits plus a grace on the episode budget;
the oracle files are read from it (whole, or windows around the gold hunks), and the prompt's messages hold the
expert's steps before the episode's first step.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from swe_srl.core.prompts import build_messages
from swe_srl.core.shells import PERSISTENT, check_shell
from swe_srl.errors import ConfigError, TaskError
from swe_srl.infra.recipes import instance_image
from swe_srl.infra.sandbox.base import Limits, Sandbox
from swe_srl.infra.sandbox.factory import open_sandbox, sandbox_spec
from swe_srl.infra.sandbox.placement import sandbox_address
from swe_srl.trajectories.expert_state import WORKDIR
from swe_srl.trajectories.oracle import oracle_windows

if TYPE_CHECKING:
    from swe_srl.benchmark.instances import Instance
    from swe_srl.infra.sandbox.pool import WarmPool
    from swe_srl.trajectories.schema import Trajectory

SANDBOX_GRACE_S = 300.0
"""The sandbox's own episode budget is the env's plus this: the env truncates first, submit can still diff."""


def find_instance(instances: list[Instance], instance_id: str, dataset: str) -> Instance:
    """The instance ``instance_id`` among ``instances`` (``dataset``'s); ``TaskError`` naming a few when absent."""
    for instance in instances:
        if instance.instance_id == instance_id:
            return instance
    known = ", ".join(i.instance_id for i in instances[:5])
    raise TaskError(f"instance_id={instance_id!r} is not in dataset {dataset!r} (e.g. {known})")


def start_sandbox(
    instance: Instance,
    limits: Limits,
    repos_dir: Path | None,
    warm_pool: WarmPool | None,
    shell: str = PERSISTENT,
) -> Sandbox:
    """A started ``episode`` sandbox of ``instance`` under ``limits`` (episode budget + :data:`SANDBOX_GRACE_S`),
    running commands in ``shell`` (``core/shells.py``)."""
    limits = replace(limits, episode_timeout_s=limits.episode_timeout_s + SANDBOX_GRACE_S)
    if warm_pool is not None and sandbox_address() is None:  # remote sandboxes start on their node, unpooled
        image = instance_image(instance, repos_dir=repos_dir)
        spec = sandbox_spec(
            image, profile="episode", base_commit=instance.base_commit, limits=limits, shell=shell
        )
        return warm_pool.acquire(spec)  # started ahead of time; the pool refills in the background
    sandbox = open_sandbox(instance, profile="episode", repos_dir=repos_dir, limits=limits, shell=shell)
    try:
        return sandbox.start()
    except BaseException:
        sandbox.close()
        raise


def read_oracle_files(
    sandbox: Sandbox, instance: Instance, wanted: bool, window: int | None
) -> dict[str, str]:
    """The oracle files as the sandbox holds them, when ``wanted``: whole (``window`` None) or windows of ``window``
    lines around the gold hunks; ``{}`` otherwise."""
    if not wanted:
        return {}
    files = {}
    for path in instance.oracle_files:
        try:
            files[path] = sandbox.read_file(f"{WORKDIR}/{path}").decode("utf-8", errors="replace")
        except FileNotFoundError:
            continue  # a file the gold patch adds
    return files if window is None else oracle_windows(instance, files, window)


def reset_messages(
    instance: Instance,
    trajectory: Trajectory | None,
    step: int,
    oracle: dict[str, str],
    shell: str = PERSISTENT,
) -> list[dict[str, str]]:
    """The prompt at reset: the problem (with the oracle files) and the expert's steps before ``step``; the system
    prompt says how commands run (``shell``)."""
    steps = trajectory.steps[:step] if trajectory is not None else []
    history = [(s.action, s.observation) for s in steps]
    return build_messages(instance.problem_statement, history, oracle_files=oracle or None, shell=shell)


def episode_shell(asked: str | None, trajectory: Trajectory | None, default: str) -> str:
    """An episode's shell: the reset option ``shell`` (``asked``), else the trajectory's, else the env's
    (``default``); an option that contradicts the trajectory is refused (its expert states hold for its shell)."""
    if asked is not None:
        check_shell(asked, "reset option shell")
    if trajectory is None:
        return asked or default
    if asked is not None and asked != trajectory.shell:
        raise ConfigError(
            f"reset option shell={asked!r}, but trajectory {trajectory.instance_id!r} ran its actions "
            f"{trajectory.shell!r}; leave the option out"
        )
    return trajectory.shell
