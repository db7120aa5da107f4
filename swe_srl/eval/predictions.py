"""SWE-bench predictions files: ``{instance_id, model_name_or_path, model_patch}`` per instance, read and written.

``swe-srl eval`` writes ``predictions.jsonl`` (:func:`prediction`); ``--policy predictions:FILE`` reads a file of any
system (:func:`read_predictions`: JSONL, or a JSON list as the official harness also accepts) and grades each patch
directly, the offline counterpart of SWE-bench's ``run_evaluation``. Every malformed record, duplicate id and id
unknown to the dataset is a ``PolicyError`` naming ``file:line`` before any work starts.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swe_srl.errors import PolicyError

PREFIX = "predictions:"
KEYS = ("instance_id", "model_name_or_path", "model_patch")


@dataclass(frozen=True)
class Prediction:
    """One system's patch for one instance (``model_patch`` ``None`` in the file reads as ``""``)."""

    instance_id: str
    model_name_or_path: str
    model_patch: str


def prediction(instance_id: str, name: str, patch: str) -> dict[str, str]:
    """One line of a predictions file."""
    return {"instance_id": instance_id, "model_name_or_path": name, "model_patch": patch}


def _records(path: Path) -> list[tuple[str, Any]]:
    """(``file:line`` or ``file[n]``, record) of a JSONL file or a JSON list."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"cannot read predictions file {str(path)!r}: {exc}") from None
    if text.lstrip().startswith("["):
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PolicyError(
                f"{path}: not a JSON list of predictions ({exc.msg} at line {exc.lineno})"
            ) from None
        return [(f"{path}[{n}]", row) for n, row in enumerate(rows)]
    records = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                records.append((f"{path}:{lineno}", json.loads(line)))
            except json.JSONDecodeError as exc:
                raise PolicyError(
                    f"{path}:{lineno}: not valid JSON ({exc.msg} at column {exc.colno})"
                ) from None
    return records


def _parse(where: str, record: Any) -> Prediction:
    if not isinstance(record, dict):
        raise PolicyError(f"{where}: expected an object with {', '.join(KEYS)}, got {type(record).__name__}")
    iid, name, patch = record.get("instance_id"), record.get("model_name_or_path"), record.get("model_patch")
    if not isinstance(iid, str) or not iid.strip():
        raise PolicyError(f"{where}: 'instance_id' must be a non-empty string, got {iid!r}")
    if not isinstance(patch, str | None):
        raise PolicyError(f"{where}: 'model_patch' of {iid} must be a string, got {type(patch).__name__}")
    if name is not None and not isinstance(name, str):
        raise PolicyError(
            f"{where}: 'model_name_or_path' of {iid} must be a string, got {type(name).__name__}"
        )
    return Prediction(iid, name or "", patch or "")


def read_predictions(path: str | Path, known_ids: Collection[str] | None = None) -> dict[str, Prediction]:
    """The predictions of ``path`` by instance id; ``known_ids``: the dataset's ids (others are an error)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise PolicyError(
            f"predictions file {str(path)!r} does not exist (give a JSONL or JSON list of {', '.join(KEYS)})"
        )
    found: dict[str, Prediction] = {}
    for where, record in _records(path):
        pred = _parse(where, record)
        if pred.instance_id in found:
            raise PolicyError(f"{where}: a second prediction for {pred.instance_id!r}; keep one per instance")
        found[pred.instance_id] = pred
    if known_ids is not None:
        unknown = sorted(set(found) - set(known_ids))
        if unknown:
            shown = ", ".join(unknown[:5]) + (f" (+{len(unknown) - 5} more)" if len(unknown) > 5 else "")
            raise PolicyError(
                f"{path}: {len(unknown)} prediction(s) for instance ids the dataset does not have: {shown}; "
                "check --dataset"
            )
    return found


def predictions_path(policy: str) -> str | None:
    """``FILE`` of a ``predictions:FILE`` policy spec, else None."""
    return policy[len(PREFIX) :] if policy.startswith(PREFIX) else None
