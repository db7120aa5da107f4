"""Import expert trajectories from files, directories or Hugging Face dataset ids, with format auto-detection.

Formats: ``native`` (our JSONL), ``swe-agent`` (``.traj``), ``mini-swe-agent`` (``.traj.json``), ``swe-smith``,
``openhands`` (also SWE-Gym and OpenHands completion logs), ``nebius``. A file may hold one record (JSON object),
a list of records (JSON array) or one record a line (JSONL); a directory is read recursively in name order, every
file whose name ends in a trajectory suffix except the files a run directory keeps beside its trajectories
(:data:`SIDECARS`); the others are listed in ``ImportStats.ignored``. An unreadable file (empty, truncated, not
UTF-8) or JSONL line stops the import naming the file and line, or with ``skip_bad`` is skipped and named, as is a
record no importer understands. The import rules: docs/training.md, "Importing trajectories".
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swe_srl.errors import TrajectoryFormatError
from swe_srl.trajectories.formats import parse_messages, text_of
from swe_srl.trajectories.formats_mini import parse_mini
from swe_srl.trajectories.formats_swe_agent import parse_nebius, parse_swe_agent
from swe_srl.trajectories.schema import Trajectory

FORMATS = ("native", "swe-agent", "mini-swe-agent", "swe-smith", "openhands", "nebius")
SUFFIXES = (".traj", ".json", ".jsonl", ".parquet")
SIDECARS = ("metadata.json", "resolved_labels.json", "preds.json", "all_preds.jsonl")
"""Files of a run directory that describe the run rather than hold trajectories: OpenHands evaluation outputs,
mini-swe-agent's and SWE-agent's predictions (their ``exit_statuses_*.yaml``, ``*.log``, ``*.patch``, ``*.pred``
and config files have no trajectory suffix)."""
SIDECAR_DIRS = ("sb-cli-reports",)
"""Folders of a run directory that hold its evaluation reports, not trajectories: sb-cli's (SWE-bench's cloud
evaluation) ``sb-cli-reports/<subset>__<split>__<run>.json``, which mini-swe-agent runs publish beside ``preds.json``."""


@dataclass
class ImportStats:
    """Records read, imported, and skipped (with ``skip_bad``), by format and by error."""

    records: int = 0
    imported: Counter[str] = field(default_factory=Counter)
    skipped: list[str] = field(default_factory=list)
    """One line per skipped file, line or record: where and why."""
    ignored: list[str] = field(default_factory=list)
    """Files of a directory that are not trajectory files (sidecars, logs, configs), not read."""


@dataclass(frozen=True)
class Unreadable:
    """A file or JSONL line that could not be read (``error`` names it): skipped with ``skip_bad``, else fatal."""

    error: str


@dataclass(frozen=True)
class Ignored:
    """A file of a directory that is not a trajectory file."""

    path: str


def detect_format(record: Any) -> str | None:
    """The format of one record, or None when no importer understands it."""
    if not isinstance(record, dict):
        return None
    if isinstance(record.get("steps"), list) and "instance_id" in record:
        return "native"
    trajectory, history = record.get("trajectory"), record.get("history")
    if isinstance(trajectory, list) and trajectory and isinstance(trajectory[0], dict):
        if "action" in trajectory[0]:
            return "swe-agent"
        if "role" in trajectory[0] and "text" in trajectory[0]:
            return "nebius"
    acted = trajectory == [] or any(isinstance(m, dict) and "action" in m for m in history or [])
    if isinstance(history, list) and trajectory in ([], None) and acted:
        return "swe-agent"  # SWE-agent files that keep only ``history`` (or ran no step)
    messages = record.get("messages")
    if isinstance(messages, str):
        try:
            messages = json.loads(messages)
        except json.JSONDecodeError:
            return None
    if not isinstance(messages, list):
        return None
    return _detect_messages(record, [m for m in messages if isinstance(m, dict)])


def _detect_messages(record: dict[str, Any], messages: list[dict[str, Any]]) -> str:
    if str(record.get("trajectory_format", "")).startswith("mini-swe-agent"):
        return "mini-swe-agent"
    if any(m.get("tool_calls") for m in messages) or any(m.get("role") == "tool" for m in messages):
        return "openhands" if "traj_id" not in record else "swe-smith"
    assistant = [text_of(m.get("content")) for m in messages if m.get("role") == "assistant"]
    if any("<function=" in text for text in assistant):
        return "swe-smith"
    if any(m.get("role") == "exit" for m in messages):
        return "mini-swe-agent"
    if any(fence in text for text in assistant for fence in ("```bash", "```sh", "```mswea_bash_command")):
        return "mini-swe-agent"
    return "openhands"


def parse_record(record: Any, where: str, fmt: str = "auto") -> Trajectory:
    """One record → a Trajectory; ``TrajectoryFormatError`` names ``where`` (file and record index)."""
    detected = detect_format(record) if fmt == "auto" else fmt
    if detected is None:
        keys = sorted(record)[:8] if isinstance(record, dict) else type(record).__name__
        raise TrajectoryFormatError(
            f"{where}: not a trajectory in any known format (keys: {keys}); formats: {', '.join(FORMATS)}"
        )
    if detected not in FORMATS:
        raise TrajectoryFormatError(
            f"unknown trajectory format {fmt!r}; use auto or one of {', '.join(FORMATS)}"
        )
    try:
        if detected == "native":
            return Trajectory.from_dict(record, where)
        if detected == "swe-agent":
            return parse_swe_agent(record, where)
        if detected == "nebius":
            return parse_nebius(record, where)
        if detected == "mini-swe-agent":
            return parse_mini(record, where)
        return parse_messages(record, where, detected)
    except TrajectoryFormatError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise TrajectoryFormatError(
            f"{where}: malformed {detected} record ({type(exc).__name__}: {exc})"
        ) from None


def _file_instance_id(path: Path) -> str:
    name = path.name
    for suffix in (".traj.json", ".traj", ".json", ".jsonl"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def iter_file_records(path: Path) -> Iterator[tuple[str, Any]]:
    """(where, record) pairs of one file; ``where`` is ``file#index`` (0-based record index) or ``file:line``.

    What cannot be read comes as an :class:`Unreadable` record naming the file (and line), so one bad JSONL line
    leaves the file's other lines readable."""
    if path.suffix == ".parquet":
        try:
            rows = list(_iter_table(str(path), _load_parquet(path)))
        except Exception as exc:  # pyarrow/datasets raise many types for a broken file
            yield str(path), Unreadable(f"{path}: unreadable parquet file ({type(exc).__name__}: {exc})")
            return
        yield from rows
        return
    try:
        data = path.read_bytes()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        yield str(path), Unreadable(f"{path}: unreadable ({type(exc).__name__}: {exc})")
        return
    if not text.strip():
        yield str(path), Unreadable(f"{path}: empty file ({len(data)} bytes)")
        return
    if path.suffix == ".jsonl":
        for lineno, line in enumerate(text.splitlines(), 1):
            if line.strip():
                yield f"{path}:{lineno}", _loads_or_unreadable(line, f"{path}:{lineno}")
        return
    loaded = _loads_or_unreadable(text, str(path))
    if isinstance(loaded, Unreadable):
        yield str(path), loaded
        return
    records = loaded if isinstance(loaded, list) else [loaded]
    for index, record in enumerate(records):
        if isinstance(record, dict) and len(records) == 1:
            record = {"_file_instance_id": _file_instance_id(path), **record}
        yield f"{path}#{index}", record


def _loads_or_unreadable(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        return Unreadable(f"{where}: invalid JSON, truncated or not JSON ({exc})")


def _loads(text: str, where: str) -> Any:
    loaded = _loads_or_unreadable(text, where)
    if isinstance(loaded, Unreadable):
        raise TrajectoryFormatError(loaded.error)
    return loaded


def _load_parquet(path: Path) -> Any:
    from datasets import load_dataset

    return load_dataset("parquet", data_files=str(path), split="train")


def _iter_table(name: str, rows: Any) -> Iterator[tuple[str, Any]]:
    for index, row in enumerate(rows):
        yield f"{name}#{index}", dict(row)


def load_hf_records(dataset_id: str) -> Iterator[tuple[str, Any]]:
    """Rows of a Hugging Face dataset id (``owner/name`` or ``owner/name:split``, default split ``train``)."""
    try:
        from datasets import load_dataset
    except ImportError:
        raise TrajectoryFormatError(
            f"{dataset_id}: loading a HF dataset needs `pip install swe-srl[train]`"
        ) from None
    name, _, split = dataset_id.partition(":")
    try:
        rows = load_dataset(name, split=split or "train")
    except Exception as exc:  # datasets raises many unrelated types (network, auth, missing split)
        raise TrajectoryFormatError(
            f"cannot load HF dataset {name!r} split {split or 'train'!r}: {exc}"
        ) from exc
    yield from _iter_table(dataset_id, rows)


def is_trajectory_file(path: Path) -> bool:
    """A file of a directory that is read for trajectories: a trajectory suffix, not a sidecar (nor in a sidecar
    folder), not hidden."""
    sidecar = path.name in SIDECARS or path.parent.name in SIDECAR_DIRS
    return path.name.endswith(SUFFIXES) and not sidecar and not path.name.startswith(".")


def iter_records(path_or_id: str) -> Iterator[tuple[str, Any]]:
    """(where, record) pairs from a file, a directory (recursive, name order) or a HF dataset id."""
    path = Path(path_or_id).expanduser()
    if path.is_dir():
        for file in sorted(p for p in path.rglob("*") if p.is_file()):
            if is_trajectory_file(file):
                yield from iter_file_records(file)
            else:
                yield str(file), Ignored(str(file))
    elif path.is_file():
        yield from iter_file_records(path)
    elif path_or_id.count("/") == 1 and not path_or_id.startswith((".", "/", "~")):
        yield from load_hf_records(path_or_id)
    else:
        raise TrajectoryFormatError(
            f"{path_or_id}: no such file or directory (and not a HF id like owner/name)"
        )


def import_with_stats(
    path_or_id: str,
    *,
    fmt: str = "auto",
    skip_bad: bool = False,
    on_record: Callable[[], None] | None = None,
) -> tuple[list[Trajectory], ImportStats]:
    """Import every record; with ``skip_bad`` a bad record is skipped and its error kept in the stats."""
    stats = ImportStats()
    trajectories: list[Trajectory] = []
    for where, record in iter_records(path_or_id):
        if isinstance(record, Ignored):
            stats.ignored.append(record.path)
            continue
        stats.records += 1
        try:
            if isinstance(record, Unreadable):
                raise TrajectoryFormatError(record.error)
            traj = parse_record(record, where, fmt)
        except TrajectoryFormatError as exc:
            if not skip_bad:
                raise
            stats.skipped.append(str(exc))
            continue
        stats.imported[traj.source] += 1
        trajectories.append(traj)
        if on_record:
            on_record()
    _apply_resolved_labels(path_or_id, trajectories)
    return trajectories, stats


def _apply_resolved_labels(path_or_id: str, trajectories: list[Trajectory]) -> None:
    """OpenHands runs keep ``resolved_labels.json`` ({instance_id: "resolved"|...}) next to the completions."""
    path = Path(path_or_id).expanduser()
    if not path.exists():
        return
    start = path if path.is_dir() else path.parent
    for folder in (start, start.parent):
        labels_file = folder / "resolved_labels.json"
        if labels_file.is_file():
            labels = _loads(labels_file.read_text(encoding="utf-8"), str(labels_file))
            for traj in trajectories:
                if traj.resolved is None and traj.instance_id in labels:
                    traj.resolved = labels[traj.instance_id] == "resolved"
            return


def import_trajectories(path_or_id: str, *, skip_bad: bool = False, fmt: str = "auto") -> list[Trajectory]:
    """Trajectories from a file, directory or HF dataset id, auto-detecting the format of each record."""
    return import_with_stats(path_or_id, fmt=fmt, skip_bad=skip_bad)[0]
