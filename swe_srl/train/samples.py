"""Trajectories + task set → SRL step samples (JSONL), cached under ``paths.cache_dir("samples")`` by their inputs.

The default run uses the bundled suite: scripted-expert trajectories of ``bundled:train`` (trained on; one per
expert seed, ``expert_seeds``) and of ``bundled:dev``/``bundled:test`` (choosing defaults / held-out
evaluation only; their samples carry their ``split``). Oracle file contents come from each task's repository at
``base_commit`` (the materialized repo of a bundled/synthesized task, ``--repos-dir`` clones, or the repos cache),
read with ``git show``; prompts show them as windows of :data:`ORACLE_WINDOW` lines around the gold patch's hunks
(``build_samples(oracle_window=None)``: whole files). The file is the samples file
``swe-srl decompose`` writes (:mod:`swe_srl.trajectories.sample_file`).
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from swe_srl.benchmark.instances import Instance, load_instances
from swe_srl.errors import TrainingError
from swe_srl.paths import atomic_write_text, cache_dir
from swe_srl.train.schema import TrainConfig
from swe_srl.trajectories import decompose, import_trajectories
from swe_srl.trajectories.oracle import oracle_contents
from swe_srl.trajectories.schema import Trajectory
from swe_srl.trajectories.scripted import default_trajectories

SAMPLES_FORMAT = "2"
"""Bump when the sample records change in a way the cache key does not see (2: shared trajectory/oracle records,
prompts built when read; see :mod:`swe_srl.trajectories.sample_file`)."""

ORACLE_WINDOW = 10
"""Training's oracle setting: windows of this many context lines around the gold patch's hunks (None: whole files)."""


@dataclass
class SampleSet:
    """A samples JSONL and what it was built from (the trajectories are needed by the effect layer)."""

    path: Path
    trajectories: list[Trajectory] = field(default_factory=list)
    instances: list[Instance] | None = None


def _code_version() -> str:

    names = ("core.prompts", "trajectories.decompose", "trajectories.sample_file", "trajectories.oracle_fit")
    modules = [importlib.import_module(f"swe_srl.{name}") for name in names]
    text = "".join(Path(str(m.__file__)).read_text() for m in modules)
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _source_key(source: str) -> str:
    path = Path(source)
    if path.is_file():
        return hashlib.sha256(path.read_bytes()).hexdigest()
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file())
        return hashlib.sha256(b"".join(p.name.encode() + p.read_bytes() for p in files)).hexdigest()
    return source  # a HF dataset id


def samples_key(
    sources: Sequence[str],
    instances: Sequence[Instance] | None,
    oracle_files: bool,
    oracle_window: int | None = ORACLE_WINDOW,
) -> str:
    """Cache key of a samples file: trajectory contents, the task set's ids/splits/commits, options, code."""
    tasks = [
        [i.instance_id, i.base_commit, i.patch, i.extra.get("split"), str(i.extra.get("repo_dir", ""))]
        for i in instances or []
    ]
    payload = json.dumps(
        [
            SAMPLES_FORMAT,
            _code_version(),
            [_source_key(s) for s in sources],
            tasks,
            oracle_files,
            oracle_window,
        ],
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _splits(instances: Sequence[Instance]) -> dict[str, str]:
    """instance_id → its split by the one split rule (``Instance.split``)."""
    return {i.instance_id: i.split for i in instances}


def build_samples(
    sources: Sequence[str],
    *,
    instances: Sequence[Instance] | None = None,
    oracle_files: bool = False,
    repos_dir: Path | None = None,
    oracle_window: int | None = ORACLE_WINDOW,
) -> SampleSet:
    """Import ``sources`` (any importer format), decompose them against ``instances`` (splits, oracle files) and
    cache the samples JSONL; a cached file with the same inputs is reused. With ``oracle_files``, prompts hold
    windows of ``oracle_window`` context lines around the gold patch's hunks (None: whole files)."""

    if oracle_files and instances is None:
        raise TrainingError(
            "--oracle-files needs the task set the trajectories belong to: pass --tasks (e.g. bundled or a .jsonl)"
        )
    trajs = [t for source in sources for t in import_trajectories(str(source))]
    if instances is not None:
        known = {i.instance_id for i in instances}
        trajs = [t for t in trajs if t.instance_id in known]
    if not trajs:
        raise TrainingError(f"no trajectories of the task set's instances in {', '.join(map(str, sources))}")
    key = samples_key(sources, instances, oracle_files, oracle_window)
    path = cache_dir("samples") / f"samples-{key}.jsonl"
    if not path.exists():
        used = {t.instance_id for t in trajs}
        wanted = [i for i in instances or [] if i.instance_id in used]
        oracle = oracle_contents(wanted, repos_dir) if oracle_files else None
        splits = _splits(wanted) if instances is not None else None
        patches = {i.instance_id: i.patch for i in wanted} if oracle_files else None
        window = oracle_window if oracle_files else None
        samples, _ = decompose(
            trajs, oracle_files=oracle, oracle_patches=patches, oracle_window=window, splits=splits
        )
        if not len(samples):
            raise TrainingError(f"decomposing {len(trajs)} trajectories gave no samples")
        atomic_write_text(path, samples.text())
    return SampleSet(path, trajs, list(instances) if instances is not None else None)


def default_sample_set(oracle_files: bool, *, expert_seeds: int, heldout: str | None = None) -> SampleSet:
    """Bundled suite: scripted trajectories of the train split (trained on; ``expert_seeds`` runs per task, seeds
    0..N-1: each seed picks other commands for the same task, so the same problem comes with different histories),
    the dev split (choosing defaults) and the test split (held out), one run each; with ``heldout`` only that one of
    dev and test (a run never reads the other: ``data.split_rows``)."""

    instances = load_instances("bundled")
    wanted = ("train", "dev", "test") if heldout is None else ("train", heldout)
    splits = sorted({str(i.extra.get("split")) for i in instances})
    sources = [
        str(default_trajectories(split=split, seed=seed))
        for split in splits
        if split in wanted
        for seed in range(expert_seeds if split == "train" else 1)
    ]
    return build_samples(sources, instances=instances, oracle_files=oracle_files)


def _task_instances(config: TrainConfig):

    return load_instances(config.tasks) if config.tasks else None


def resolve_samples(config: TrainConfig):
    """The run's :class:`~swe_srl.train.samples.SampleSet`: --samples (+ --trajectories for the effect layer), else
    decomposed --trajectories (oracle files and splits from --tasks), else the bundled default."""

    if config.samples:
        trajs = []
        if config.trajectories:
            trajs = [t for source in config.trajectories for t in import_trajectories(source)]
        return SampleSet(Path(config.samples), trajs, _task_instances(config))
    if config.trajectories:
        return build_samples(
            config.trajectories,
            instances=_task_instances(config),
            oracle_files=config.oracle_files,
            repos_dir=config.repos_path,
        )
    if config.tasks:
        raise TrainingError(
            f"--tasks {config.tasks} without --trajectories: pass the expert trajectories of that task set "
            "(`swe-srl expert generate` or any importer format), or drop --tasks for the bundled default"
        )
    return default_sample_set(
        config.oracle_files, expert_seeds=config.expert_seeds, heldout=config.heldout_split
    )
