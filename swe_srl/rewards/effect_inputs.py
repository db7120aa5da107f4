"""The syntax layer's step inputs where an instance and its expert trajectory are known (env, TRL adapter)."""

from __future__ import annotations

from pathlib import Path

from swe_srl.benchmark.instances import Instance
from swe_srl.infra.recipes import instance_executables
from swe_srl.trajectories.expert_state import created_files, expert_states
from swe_srl.trajectories.schema import Trajectory


def step_inputs(
    instance: Instance, traj: Trajectory, step: int, *, repos_dir: Path | None = None
) -> tuple[frozenset[str], frozenset[str]]:
    """(executables of the instance image, files the expert's steps before ``step`` created): the syntax layer's
    ``StepContext.executables`` / ``created_files`` where an instance and its expert trajectory are known."""
    state = expert_states(traj, instance, repos_dir=repos_dir)
    created = created_files(state, min(step, len(state.diffs)))
    key = (instance.instance_id, instance.base_commit)
    if key not in _EXECUTABLES:  # the image is resolved (and its listing read) once per instance and process
        _EXECUTABLES[key] = instance_executables(instance, repos_dir=repos_dir)
    return _EXECUTABLES[key], created


_EXECUTABLES: dict[tuple[str, str], frozenset[str]] = {}
