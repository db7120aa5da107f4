"""The syntax layer's inputs of a located step: the executables of the instance image and the files the expert's
steps before it created (``StepContext.executables`` / ``created_files``).

The env (:func:`step_inputs`) and the TRL adapter (:class:`StepInputs`, by instance id, trajectory hash and step)
take them from here, so one action at one step of one instance gets one score wherever it is scored. An image's
executables are listed once per image (``infra/executables.py``: a JSON file per tag); the expert states once per
trajectory (``trajectories/expert_state.py``). Both need Docker the first time.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from swe_srl.benchmark.instances import Instance, load_instances
from swe_srl.errors import ConfigError
from swe_srl.infra.engine import engine_answers
from swe_srl.infra.recipes import instance_executables
from swe_srl.infra.sandbox.placement import sandbox_address
from swe_srl.infra.sandbox.remote import call_on_sandbox_node
from swe_srl.trajectories.decompose import executed_steps
from swe_srl.trajectories.expert_state import created_files, expert_states
from swe_srl.trajectories.schema import Trajectory

NO_TRAJECTORIES = (
    "syntax layer: no expert trajectories were given (--samples without --trajectories), so every repository path "
    "counts as present; command words are judged against the instance image's executables"
)
NO_DOCKER = (
    "syntax layer: no Docker engine answers, so command words are judged against the default executable set "
    "(rewards/commands.py DEFAULT_EXECUTABLES) and every repository path counts as present; with Docker they are "
    "judged against the instance image's executables and the files the expert created, as the env does"
)
NO_TASK = (
    "syntax layer: some samples' instances are not in the task set {!r}, so their image is unknown: command "
    "words are judged against the default executable set (rewards/commands.py DEFAULT_EXECUTABLES) and every "
    "repository path counts as present; pass the samples' task set with --tasks to judge them as the env does"
)
"""What :class:`StepInputs` says (once, on stderr) when it falls back; also its ``fallback``."""


def step_inputs(
    instance: Instance, traj: Trajectory, step: int, *, repos_dir: Path | None = None
) -> tuple[frozenset[str], frozenset[str]]:
    """(executables of the instance image, files the expert's steps before ``step`` created): the syntax layer's
    ``StepContext.executables`` / ``created_files`` where an instance and its expert trajectory are known."""
    state = expert_states(traj, instance, repos_dir=repos_dir)
    created = created_files(state, min(step, len(state.diffs)))
    return image_executables_of(instance, repos_dir=repos_dir), created


def image_executables_of(instance: Instance, *, repos_dir: Path | None = None) -> frozenset[str]:
    """The executables of ``instance``'s image, resolved (and the listing read) once per instance and process."""
    key = (instance.instance_id, instance.base_commit)
    if key not in _EXECUTABLES:
        if (address := sandbox_address()) is None:
            _EXECUTABLES[key] = instance_executables(instance, repos_dir=repos_dir)
        else:  # the image is on the sandbox nodes
            what = f"executables of {instance.instance_id}"
            _EXECUTABLES[key] = call_on_sandbox_node(
                instance_executables, instance, repos_dir=repos_dir, address=address, what=what
            )
    return _EXECUTABLES[key]


_EXECUTABLES: dict[tuple[str, str], frozenset[str]] = {}


class StepInputs:
    """Locates steps by (instance id, trajectory hash, step) and gives their syntax inputs (call it).

    Trajectories are found by content hash (:meth:`add_trajectory`, with the steps decomposition keeps, so a
    sample's step index is the trajectory's), instances by id in ``instances`` or else in ``dataset``. Without a
    Docker engine (checked once, on the first call) every step gets ``(None, None)`` — the default executable set,
    created files unknown — and :attr:`fallback` says so (:data:`NO_DOCKER`, printed once on stderr); with no
    trajectory registered at all, steps get the image's executables and unknown created files (:data:`NO_TRAJECTORIES`).
    """

    def __init__(
        self,
        trajectories: Iterable[Trajectory] = (),
        instances: Iterable[Instance] | None = None,
        *,
        dataset: str = "bundled",
        repos_dir: Path | None = None,
    ) -> None:
        self.dataset, self.repos_dir = dataset, repos_dir
        self._instances = {i.instance_id: i for i in instances} if instances is not None else None
        self._trajectories: dict[str, Trajectory] = {}
        for traj in trajectories:
            self.add_trajectory(traj)
        self.fallback: str | None = None
        self._docker: bool | None = None
        self._located: dict[tuple[str, str, int], tuple[frozenset[str], frozenset[str]]] = {}

    def add_trajectory(self, traj: Trajectory) -> None:
        """Register ``traj`` under its content hash, with the steps decomposition keeps (so sample steps match)."""
        steps = executed_steps(traj)
        self._trajectories[traj.content_hash()] = Trajectory(
            traj.instance_id, traj.problem, steps, traj.patch, shell=traj.shell
        )

    def instance(self, instance_id: str) -> Instance:
        """The instance named ``instance_id`` (``instances``, else ``dataset``, loaded on first use)."""
        if not self.knows(instance_id):
            raise ConfigError(f"instance {instance_id!r} is not in dataset {self.dataset!r}")
        return self._instances[instance_id]

    def knows(self, instance_id: str) -> bool:
        """Whether ``instance_id`` is in ``instances`` (else ``dataset``, loaded on first use)."""
        if self._instances is None:
            self._instances = {i.instance_id: i for i in load_instances(self.dataset)}
        return instance_id in self._instances

    def locate(
        self, instance_id: str | None, trajectory_hash: str | None, step: int | None
    ) -> tuple[Instance, Trajectory]:
        """The instance and registered trajectory of a step; a ``ConfigError`` naming what is missing."""
        if instance_id is None or trajectory_hash is None or step is None:
            raise ConfigError(
                "a located step needs instance_id, trajectory_hash and step (decompose adds them)"
            )
        traj = self._trajectories.get(trajectory_hash)
        if traj is None:
            raise ConfigError(f"unknown trajectory_hash {trajectory_hash!r}; add_trajectory() it first")
        return self.instance(instance_id), traj

    def __call__(
        self, instance_id: str | None, trajectory_hash: str | None, step: int | None
    ) -> tuple[frozenset[str] | None, frozenset[str] | None]:
        """(executables, created_files) of a located step; (None, None) when not located or without Docker, and
        created files None (unknown) when no trajectory was registered at all."""
        if instance_id is None or trajectory_hash is None or step is None or not self._engine():
            return None, None
        if not self.knows(instance_id):
            self._fall_back(NO_TASK.format(self.dataset))
            return None, None
        if not self._trajectories:
            self._fall_back(NO_TRAJECTORIES)
            return image_executables_of(self.instance(instance_id), repos_dir=self.repos_dir), None
        key = (instance_id, trajectory_hash, step)
        # each step's inputs are read once (expert states: a JSON file and a diff)
        if key not in self._located:
            instance, traj = self.locate(instance_id, trajectory_hash, step)
            self._located[key] = step_inputs(instance, traj, step, repos_dir=self.repos_dir)
        return self._located[key]

    def _fall_back(self, why: str) -> None:
        if self.fallback != why:
            self.fallback = why
            print(why, file=sys.stderr)

    def _engine(self) -> bool:
        if self._docker is None:  # remote sandboxes: the sandbox nodes' engines answer for the images
            self._docker = sandbox_address() is not None or engine_answers()
            if not self._docker:
                self._fall_back(NO_DOCKER)
        return self._docker
