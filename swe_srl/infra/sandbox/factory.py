"""The one place sandboxes are made: named profiles (limits, environment, labels) and the factory over them.

Every container the project starts for a task comes from :func:`open_sandbox` (or :func:`sandbox_spec` where a
warm pool starts it), so each use's settings are chosen here, on purpose:

============  ==========================================  ==============================  ===========================
profile       used by                                     limits (beyond ``Limits()``)    environment (beyond docker
                                                                                          ``DEFAULT_ENV``)
============  ==========================================  ==============================  ===========================
episode       ``SWEEnv`` (agent loop, eval, RLVR)          none; the env passes its own    none
                                                          limits (+300 s episode grace)
grading       ``grading.runner.grade``                    memory 4g; command timeout =    none
                                                          the grading timeout (1800 s),
                                                          episode = timeout + 300 s;
                                                          CPUs the spec's ``nano_cpus``
                                                          (capped at the host's), else 1
validation    ``synth.bundled`` (mutations re-checked)    none                            none
expert        expert-state replay, ``eval.replay``,       command timeout 120 s           ``QUIET_WORKTREE``
              the scripted expert
effect        ``rewards.effect.evaluator``               command timeout 120 s           ``QUIET_WORKTREE``
shell         ``env.debug_shell`` (``swe-srl env shell``)  command timeout 120 s           ``QUIET_WORKTREE``
============  ==========================================  ==============================  ===========================

Why they differ:

* **episode** is the policy's shell: resource limits are the env's (``SWEEnv(limits=...)``, default ``Limits()``)
  and the sandbox's own episode budget is the env's plus a grace, so the env truncates first and ``submit`` can
  still diff. No extra environment: the policy gets a stock shell; its submitted patch is cleaned of bytecode and
  build artefacts by ``core.patches.clean_patch``.
* **grading** runs the instance's whole test command as one command, so the command timeout is the grading
  timeout, and test suites get 4g instead of 2g. A spec naming ``nano_cpus`` (pylint's: 2) gets that many CPUs, as
  SWE-bench's harness gives its containers, capped at the engine's cores (:func:`grading_limits`); pylint's tests
  skip with "Need 2 or more cores" under one. No extra environment: tests run the way the SWE-bench harness
  runs them (pytest's cache provider and bytecode as usual), so verdicts match it.
* **validation** re-runs each bundled mutation's tests in one container per library; each test run passes its own
  300 s timeout, so the defaults do. Same (no) environment as grading, whose verdicts it predicts.
* **expert** replays expert trajectories and stores their cumulative diffs; expert actions include whole pytest
  runs, hence 120 s per command. ``QUIET_WORKTREE`` keeps ``__pycache__`` and ``.pytest_cache`` out of the
  worktree so the stored diffs hold only what the actions meant to change.
* **effect** restores the expert state and compares the tree after the policy's action with the expert's stored
  tree (hash of the diff): it must run under exactly the expert's settings, or equal actions would leave
  different trees.
* **shell** is for a person debugging an episode at the expert state: the expert's settings, so commands behave as
  they did during the replay.

Every container also carries the label ``swe-srl.profile=<name>`` (``docker ps --filter label=swe-srl.profile=…``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from swe_srl.benchmark.instances import Instance
from swe_srl.core.shells import PERSISTENT
from swe_srl.errors import ConfigError
from swe_srl.infra.recipes import instance_image
from swe_srl.infra.sandbox.base import GRADING_NETWORK_ENV, Limits, SandboxSpec
from swe_srl.infra.sandbox.docker import DockerSandbox
from swe_srl.infra.sandbox.placement import sandbox_address
from swe_srl.infra.sandbox.remote import RemoteSandbox

ProfileName = Literal["episode", "grading", "validation", "expert", "effect", "shell"]
PROFILE_LABEL = "swe-srl.profile"
QUIET_WORKTREE = {"PYTHONDONTWRITEBYTECODE": "1", "PYTEST_ADDOPTS": "-p no:cacheprovider"}
"""No bytecode or pytest cache files in the worktree: diffs hold only what commands meant to change."""
GRADING_TIMEOUT_S = 1800.0
GRADING_GRACE_S = 300.0
"""Grading's episode budget beyond its test command's timeout (start, apply, reading the report)."""


@dataclass(frozen=True)
class SandboxProfile:
    """The settings of one use of sandboxes (see the module doc for why each differs)."""

    limits: Limits = field(default_factory=Limits)
    env: Mapping[str, str] = field(default_factory=dict)


_EXPERT = SandboxProfile(Limits(command_timeout_s=120.0), QUIET_WORKTREE)
PROFILES: dict[str, SandboxProfile] = {
    "episode": SandboxProfile(),
    "grading": SandboxProfile(
        Limits(
            memory="4g",
            command_timeout_s=GRADING_TIMEOUT_S,
            episode_timeout_s=GRADING_TIMEOUT_S + GRADING_GRACE_S,
        )
    ),
    "validation": SandboxProfile(),
    "expert": _EXPERT,
    "effect": _EXPERT,
    "shell": _EXPERT,
}


def sandbox_spec(
    image: str,
    *,
    profile: ProfileName,
    base_commit: str | None = None,
    limits: Limits | Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    shell: str = PERSISTENT,
) -> SandboxSpec:
    """The spec of a ``profile`` sandbox on ``image``.

    ``limits``: a ``Limits`` replaces the profile's, a mapping overrides some of its fields (``{"memory": "8g"}``).
    ``env`` is added to the profile's environment. ``base_commit`` is what ``diff()`` compares against. ``shell``:
    how ``run()`` runs commands (``core/shells.py``: ``persistent``, or ``per-action`` as a trajectory's agent ran
    them).
    """
    if profile not in PROFILES:
        raise ConfigError(f"sandbox profile {profile!r}: choose one of {', '.join(PROFILES)}")
    chosen = PROFILES[profile]
    if isinstance(limits, Mapping):
        limits = replace(chosen.limits, **limits)
    return SandboxSpec(
        image=image,
        limits=limits or chosen.limits,
        base_commit=base_commit,
        env={**chosen.env, **(env or {})},
        labels={PROFILE_LABEL: profile},
        shell=shell,
    )


def open_sandbox(
    target: str | Instance,
    *,
    profile: ProfileName,
    repos_dir: Path | None = None,
    **settings: Any,
) -> DockerSandbox | RemoteSandbox:
    """A not yet started ``profile`` sandbox: use it as a context manager (or ``.start()`` it).

    ``target``: an image tag, or an ``Instance`` (its image, built if needed from ``repos_dir``, diffing against its
    base commit). ``settings`` are :func:`sandbox_spec`'s (``base_commit``, ``limits``, ``env``). Where it runs is
    ``$SWE_SRL_SANDBOXES`` (``placement.py``): here, or on a Ray sandbox node, which builds the instance's image.
    """
    instance = target if isinstance(target, Instance) else None
    if instance is not None:
        settings.setdefault("base_commit", instance.base_commit)
    return make_sandbox(lambda image: sandbox_spec(image, profile=profile, **settings), target, repos_dir)


def make_sandbox(
    spec_of: Callable[[str], SandboxSpec], target: str | Instance, repos_dir: Path | None = None
) -> DockerSandbox | RemoteSandbox:
    """The sandbox of ``spec_of(image)`` (a function of the image tag) on ``target``'s image, placed as
    ``$SWE_SRL_SANDBOXES`` says: an ``Instance``'s image is resolved here for a local sandbox, on the sandbox node
    (:data:`REMOTE_IMAGE` + its id until then) for a remote one."""
    address = sandbox_address()
    if address is None:
        image = instance_image(target, repos_dir=repos_dir) if isinstance(target, Instance) else target
        return DockerSandbox(spec_of(image))
    if isinstance(target, Instance):
        spec = spec_of(f"{REMOTE_IMAGE}{target.instance_id}")
        return RemoteSandbox(spec, address, instance=target, repos_dir=repos_dir)
    return RemoteSandbox(spec_of(target), address)


REMOTE_IMAGE = "swe-srl-remote-instance:"
"""The image of a remote sandbox's spec until its node has resolved the instance's image."""


def grading_limits(timeout: float, spec_cpus: float | None, host_cpus: int) -> dict[str, Any]:
    """The grading profile's limits for one test run (a mapping for ``limits=``): the command timeout ``timeout``,
    the episode ``timeout`` + grace, ``cpus`` = ``spec_cpus`` (the spec's) capped at ``host_cpus``, the profile's
    default (1) when the spec names none, and ``network`` when :data:`~swe_srl.infra.sandbox.base.GRADING_NETWORK_ENV`
    is ``1``."""
    limits: dict[str, Any] = {"command_timeout_s": timeout, "episode_timeout_s": timeout + GRADING_GRACE_S,
                              "network": os.environ.get(GRADING_NETWORK_ENV, "") == "1"}  # fmt: skip
    if spec_cpus:
        limits["cpus"] = float(min(spec_cpus, max(host_cpus, 1)))
    return limits
