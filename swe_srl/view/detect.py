"""What a PATH given to ``swe-srl view`` is: an eval run folder, a training run folder (one run or a ``--seeds``
folder), a trajectories file in any format ``swe-srl trajectories import`` reads, or a samples file."""

from __future__ import annotations

import json
from pathlib import Path

from swe_srl.errors import ConfigError, TrajectoryFormatError
from swe_srl.trajectories.importers import detect_format, is_trajectory_file, iter_file_records

KINDS = ("eval", "train", "seeds", "trajectories", "samples")
EXPECTED = (
    "an eval run folder (report.json or results/), a training run folder (metrics.jsonl, summary.json or "
    "heldout.jsonl; seeds.json for --seeds), a trajectories file or folder (native, swe-agent, mini-swe-agent, swe-smith, "
    "openhands, nebius) or a samples file (swe-srl decompose)"
)
TRAIN_FILES = ("metrics.jsonl", "summary.json", "heldout.jsonl")


def detect(path: Path) -> str:
    """The kind of ``path`` (one of :data:`KINDS`), or a one-line ``ConfigError`` naming what was expected."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: no such file or folder; expected {EXPECTED}")
    if path.is_dir():
        return _folder_kind(path)
    return _file_kind(path)


def _folder_kind(path: Path) -> str:
    if (path / "report.json").is_file() or (path / "results").is_dir():
        return "eval"
    if any((path / name).is_file() for name in TRAIN_FILES):
        return "train"
    if (path / "seeds.json").is_file() or seed_runs(path):
        return "seeds"
    first = next((p for p in sorted(path.rglob("*")) if p.is_file() and is_trajectory_file(p)), None)
    if first is not None and _file_kind(first) == "trajectories":  # a run's folder of trajectory files
        return "trajectories"
    raise ConfigError(f"{path}: a folder holding none of report.json, results/, {', '.join(TRAIN_FILES)}, "
                      f"seeds.json; expected {EXPECTED}")  # fmt: skip


def seed_runs(path: Path) -> list[Path]:
    """The ``seed-K/`` training runs of a ``--seeds`` folder, by K."""
    runs = [p for p in path.glob("seed-*") if p.is_dir() and any((p / n).is_file() for n in TRAIN_FILES)]
    return sorted(runs, key=lambda p: (len(p.name), p.name))


def _file_kind(path: Path) -> str:
    first = _first_record(path)
    if isinstance(first, dict) and (first.get("kind") == "header" or "expert_action" in first):
        return "samples"
    if detect_format(first) is not None:
        return "trajectories"
    keys = ", ".join(sorted(first)[:6]) if isinstance(first, dict) else type(first).__name__
    raise ConfigError(
        f"{path}: its first record ({keys}) is neither a sample nor a trajectory; expected {EXPECTED}"
    )


def _first_record(path: Path) -> object:
    if path.suffix in (".json", ".traj", ".parquet"):  # whole files; a JSONL file is read by its first line
        try:
            for _, record in iter_file_records(path):
                return record
        except TrajectoryFormatError as exc:
            raise ConfigError(f"{exc}; expected {EXPECTED}") from None
        raise ConfigError(f"{path}: holds no record; expected {EXPECTED}")
    with open(path, "rb") as handle:
        line = next((line for line in handle if line.strip()), b"")
    try:
        return json.loads(line)
    except ValueError:
        raise ConfigError(f"{path}: not JSON; expected {EXPECTED}") from None
