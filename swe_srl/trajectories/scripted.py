"""The scripted expert: realistic trajectories on tasks with a known gold patch, run for real in a sandbox.

Each trajectory locates the code (grep/find/ls), inspects it (cat/sed -n/editor view), reproduces the failure
(pytest), applies the gold patch hunk by hunk (``sed -i`` or the editor, chosen by the seed), verifies and submits.
Observations are what the commands really printed, except what differs on every run (``steady``); only
trajectories whose final diff resolves the task are kept. The expert state after every step (cumulative diff and
cwd, as ``expert_state.replay_steps`` gives them) is recorded as the script runs and stored for ``expert_states``, so
the reward's inputs and the effect layer need no replay of a scripted trajectory.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from swe_srl.benchmark.instances import Instance, load_instances
from swe_srl.benchmark.verdicts import verdict
from swe_srl.core.shells import PERSISTENT
from swe_srl.errors import SweSrlError, TaskError
from swe_srl.grading.runner import run_tests
from swe_srl.infra.image_build import file_lock
from swe_srl.infra.recipes import instance_image
from swe_srl.infra.sandbox.factory import open_sandbox
from swe_srl.infra.sandbox.placement import sandbox_address
from swe_srl.paths import cache_dir
from swe_srl.trajectories.expert_state import save_state
from swe_srl.trajectories.schema import Trajectory, write_jsonl
from swe_srl.trajectories.scripted_edits import plan_edits
from swe_srl.trajectories.scripted_steps import Script, pytest_target, symbol_of
from swe_srl.trajectories.scripted_steps import steady as steady

MAX_STEPS = 9


def script_trajectory(sandbox, instance: Instance, *, seed: int = 0) -> Trajectory:
    """Run one scripted trajectory for ``instance`` in a started ``sandbox`` (at the base commit); the expert state
    after each of its steps is stored for :func:`~swe_srl.trajectories.expert_state.expert_states`."""
    rng = random.Random(f"{seed}:{instance.instance_id}")
    script = Script(sandbox, instance, rng)
    edits = plan_edits(instance.patch, script.read)
    if not edits:
        raise TaskError(f"{instance.instance_id}: gold patch has no edits to script")
    symbol, is_def = symbol_of(instance, edits)
    spare = MAX_STEPS - (len(edits) + 4)  # locate, inspect, fix..., verify, submit are always there
    overview, reproduce = rng.random() < 0.35, rng.random() < 0.8
    script.locate(symbol, is_def, edits[0].path, overview=overview and spare >= 2)
    script.inspect(edits[0], symbol, is_def)
    target = pytest_target(instance, script.exists)
    if target and reproduce and spare >= 1:
        script.run_tests(target, "before")
    script.fix(edits)
    if target:
        script.run_tests(target, "after")
    else:
        script.do("Let me review the full change before submitting.", "git diff")
    script.submit("The fix is in place and verified; submitting.")
    traj = Trajectory(
        instance_id=instance.instance_id,
        problem=instance.problem_statement,
        steps=script.steps,
        patch=sandbox.diff(),
        source="scripted",
        metadata={"seed": seed},
        shell=sandbox.spec.shell,  # the sandbox ran the script as its spec says: persistent or per-action
    )
    save_state(traj, instance, script.state)
    return traj


def _resolved(sandbox, instance: Instance) -> bool:

    return verdict(instance, run_tests(sandbox, instance)) == "resolved"


def _one(instance: Instance, seed: int, repos_dir: Path | None, shell: str = PERSISTENT) -> Trajectory | str:
    """A resolved trajectory, or the reason there is none."""

    try:
        with open_sandbox(instance, profile="expert", repos_dir=repos_dir, shell=shell) as sandbox:
            traj = script_trajectory(sandbox, instance, seed=seed)
            traj.resolved = _resolved(sandbox, instance)
    except TaskError as exc:
        return f"skipped: {exc}"
    return traj if traj.resolved else "dropped: the scripted fix did not resolve it"


def scripted_trajectories(
    instances: Iterable[Instance],
    *,
    seed: int = 0,
    repos_dir: Path | None = None,
    progress: bool = True,
    workers: int = 2,
    shell: str = PERSISTENT,
) -> list[Trajectory]:
    """One scripted trajectory per instance, run for real in ``workers`` parallel sandboxes; only resolved ones
    are kept (the others are reported), in the order of ``instances``. ``shell``: how the sandboxes run the
    script's commands (``core/shells.py``), recorded in each trajectory."""

    instances = list(instances)
    console = Console(stderr=True)
    for instance in instances:  # build images first, one at a time (builds are the heavy, locked part)
        if sandbox_address() is None:  # remote sandboxes: each node builds what it runs
            instance_image(instance, repos_dir=repos_dir)
    with Progress(console=console, disable=not progress) as bar, ThreadPoolExecutor(max(1, workers)) as pool:
        task = bar.add_task("scripted expert", total=len(instances))
        futures = [pool.submit(_one, instance, seed, repos_dir, shell) for instance in instances]
        results = []
        for instance, future in zip(instances, futures, strict=True):
            results.append(future.result())
            bar.advance(task)
            if isinstance(results[-1], str):
                console.print(f"[yellow]{instance.instance_id}[/] {results[-1]}", highlight=False)
    return [r for r in results if isinstance(r, Trajectory)]


def _code_version() -> str:
    here = Path(__file__).parent
    text = "".join(
        (here / name).read_text() for name in ("scripted.py", "scripted_steps.py", "scripted_edits.py")
    )
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def cache_path(instances: Sequence[Instance], *, split: str, seed: int = 0) -> Path:
    """Where :func:`default_trajectories` caches the scripted trajectories of ``split``'s ``instances`` and ``seed``."""
    suite = json.dumps([i.to_record() for i in instances], sort_keys=True, default=str)
    key = hashlib.sha256(f"{suite}|{seed}|{_code_version()}".encode()).hexdigest()[:16]
    return cache_dir("trajectories") / f"scripted-{split}-{key}.jsonl"


def default_trajectories(*, split: str = "train", seed: int = 0) -> Path:
    """Scripted trajectories for the bundled suite's ``split`` as native JSONL, generated once and cached. Concurrent
    callers share one generation (two would differ in their observations' timings, so in their samples)."""

    instances = load_instances(f"bundled:{split}")
    path = cache_path(instances, split=split, seed=seed)
    with file_lock(path.name):
        if not path.exists():
            trajectories = scripted_trajectories(instances, seed=seed)
            if not trajectories:
                raise SweSrlError(
                    f"the scripted expert resolved none of the {len(instances)} bundled {split} tasks"
                )
            write_jsonl(path, trajectories)
    return path
