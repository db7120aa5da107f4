"""Step samples (JSONL written by ``decompose``) → ``datasets.Dataset`` with a conversational ``prompt``.

Columns other than ``prompt`` (``expert_action``, ``instance_id``, ``step``, ...) reach the reward function as
keyword arguments, as TRL does for every dataset column.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from swe_srl.errors import TrainingError

REQUIRED = ("prompt", "expert_action")
KEEP = (
    "prompt",
    "expert_action",
    "expert_thought",
    "instance_id",
    "step",
    "num_steps",
    "trajectory_hash",
    "split",
)


def _check(record: Any, where: str) -> dict[str, Any]:
    if not isinstance(record, dict):
        raise TrainingError(f"{where}: a sample must be a JSON object, got {type(record).__name__}")
    for key in REQUIRED:
        if key not in record:
            raise TrainingError(
                f"{where}: sample has no {key!r} field (write samples with `swe-srl decompose`)"
            )
    prompt = record["prompt"]
    if not isinstance(prompt, list) or not all(
        isinstance(m, dict) and "role" in m and "content" in m for m in prompt
    ):
        raise TrainingError(f"{where}: 'prompt' must be a list of {{role, content}} messages")
    if not str(record["expert_action"]).strip():
        raise TrainingError(f"{where}: empty 'expert_action'")
    return record


def read_samples(path: Path) -> list[dict[str, Any]]:
    """Read and validate a samples JSONL file; errors name the file and line."""
    path = Path(path)
    if not path.is_file():
        raise TrainingError(f"samples file {path} does not exist (create it with `swe-srl decompose`)")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TrainingError(f"{path}:{number}: not valid JSON ({exc.msg})") from exc
        rows.append(_check(record, f"{path}:{number}"))
    if not rows:
        raise TrainingError(f"samples file {path} holds no samples")
    return rows


def _normalize(row: dict[str, Any]) -> dict[str, Any]:
    out = {key: row.get(key) for key in KEEP}
    out["prompt"] = [{"role": str(m["role"]), "content": str(m["content"])} for m in row["prompt"]]
    out["expert_thought"] = str(row.get("expert_thought") or "")
    out["instance_id"] = str(row.get("instance_id") or "")
    out["step"] = int(row.get("step") or 0)
    out["num_steps"] = int(row.get("num_steps") or 0)
    out["trajectory_hash"] = str(row.get("trajectory_hash") or "")
    return out


def _held_out(instance_id: str, fraction: float, seed: int) -> bool:
    digest = hashlib.sha256(f"{seed}:{instance_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def split_rows(
    rows: list[dict[str, Any]], test_fraction: float = 0.1, seed: int = 0
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Train/test split: the samples' own ``split`` field when present, else by a hash of the instance id
    (all steps of one instance land on the same side)."""
    normalized = [_normalize(r) for r in rows]
    train, test = [], []
    for row in normalized:
        split = row.get("split")
        if split not in ("train", "test"):
            key = row["instance_id"] or row["trajectory_hash"] or json.dumps(row["prompt"][:2])
            split = "test" if _held_out(key, test_fraction, seed) else "train"
        row["split"] = split
        (test if split == "test" else train).append(row)
    if not train:
        raise TrainingError(f"no training samples: all {len(rows)} samples are in the test split")
    return train, test


def to_dataset(rows: list[dict[str, Any]]):
    """A ``datasets.Dataset`` from normalized rows."""
    from datasets import Dataset

    return Dataset.from_list(rows)


def load_datasets(path: Path, test_fraction: float = 0.1, seed: int = 0):
    """``(train Dataset, test rows)`` from a samples JSONL file."""
    train, test = split_rows(read_samples(path), test_fraction, seed)
    return to_dataset(train), test
