"""Step samples (JSONL written by ``decompose``) → ``datasets.Dataset`` with a conversational ``prompt``.

Columns other than ``prompt`` (``expert_action``, ``instance_id``, ``step``, ...) reach the reward function as
keyword arguments, as TRL does for every dataset column.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from swe_srl.benchmark.eval_sets import eval_instances
from swe_srl.benchmark.instances import HELD_OUT, split_of
from swe_srl.errors import TrainingError, TrajectoryFormatError
from swe_srl.trajectories.sample_file import SHARED, expand

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
    if "prompt" not in record and "messages" in record:  # `swe-srl decompose --expand` names the prompt so
        record = {"prompt": record["messages"], **{k: v for k, v in record.items() if k != "messages"}}
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
    """Read and validate a samples JSONL file; errors name the file and line.

    Both formats: self-contained samples (format 1: each with its ``prompt``, or ``messages`` as ``swe-srl decompose
    --expand`` writes it) and the shared-record file that
    ``swe-srl decompose`` writes (format 2, :mod:`swe_srl.trajectories.sample_file`), whose prompts are built here,
    exactly as format 1 held them."""
    path = Path(path)
    if not path.is_file():
        raise TrainingError(f"samples file {path} does not exist (create it with `swe-srl decompose`)")
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append((f"{path}:{number}", json.loads(line)))
        except json.JSONDecodeError as exc:
            raise TrainingError(f"{path}:{number}: not valid JSON ({exc.msg})") from exc
    built = [(w, r) for w, r in records if isinstance(r, dict) and r.get("kind") is not None]
    try:
        expanded = iter(expand(built))
    except TrajectoryFormatError as exc:
        raise TrainingError(str(exc)) from exc
    rows = []
    for where, record in records:  # in file order: format-2 samples take their built row
        if isinstance(record, dict) and record.get("kind") in SHARED:
            continue
        if isinstance(record, dict) and record.get("kind") is not None:
            record = next(expanded)
        rows.append(_check(record, where))
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
    out["oracle_files"] = [str(p) for p in row.get("oracle_files") or []]  # the oracle paths its prompt shows
    return out


def split_rows(
    rows: list[dict[str, Any]], test_fraction: float = HELD_OUT, heldout: str = "test"
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(train, held-out) rows by the one split rule (:func:`benchmark.instances.split_of`): a sample's own
    ``split`` wins, else a hash of its instance id holds out ``test_fraction``. The held-out rows are the
    ``heldout`` split's (``test``, or ``dev`` while choosing defaults); the other one is never used."""
    normalized = [_normalize(r) for r in rows]
    train, held = [], []
    for row in normalized:
        key = row["instance_id"] or row["trajectory_hash"] or json.dumps(row["prompt"][:2])
        row["split"] = split_of(key, row.get("split"), held_out=test_fraction)
        {"train": train, heldout: held}.get(row["split"], []).append(row)
    if not train:
        raise TrainingError(f"no training samples: none of the {len(rows)} samples is in the train split")
    return train, held


def guard_eval_instances(instance_ids: list[str], allow: bool, what: str) -> None:
    """Refuse to train on SWE-bench evaluation instances unless ``allow`` (``--allow-eval-instances``)."""
    found = eval_instances(instance_ids)
    if found and not allow:
        shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
        raise TrainingError(
            f"{what} include {len(found)} SWE-bench evaluation instance(s) (Verified/Lite/test: {shown}); "
            "those are for evaluation only. Pass --allow-eval-instances to train on them anyway"
        )


def to_dataset(rows: list[dict[str, Any]]):
    """A ``datasets.Dataset`` from normalized rows."""
    from datasets import Dataset

    return Dataset.from_list(rows)


def prompts_per_generation(args: Any) -> int:
    """The distinct prompts one generation batch draws: TRL's sampler takes ``generation_batch_size ÷
    num_generations`` rows at a time and drops an incomplete batch, so a dataset with fewer rows trains no step."""
    return max(1, args.generation_batch_size // args.num_generations)


def _batch_arithmetic(args: Any) -> str:
    processes = args.generation_batch_size // (args.per_device_train_batch_size * args.steps_per_generation)
    return (
        f"trl.per_device_train_batch_size {args.per_device_train_batch_size} × {processes} process(es) × "
        f"trl.steps_per_generation {args.steps_per_generation} ÷ trl.num_generations {args.num_generations}"
    )


def require_generation_batch(rows: int, args: Any, what: str) -> None:
    """Refuse a dataset smaller than one generation batch (it would end at step 0 and save the start as trained)."""
    need = prompts_per_generation(args)
    if rows < need:
        raise TrainingError(
            f"{what}: {rows} training rows, but one generation batch draws {need} prompts "
            f"({_batch_arithmetic(args)}); give more samples or lower trl.per_device_train_batch_size"
        )


def fill_generation_batch(rows: list[dict[str, Any]], args: Any) -> list[dict[str, Any]]:
    """``rows`` repeated (in order) until they fill at least one generation batch: a few RLVR instances still give
    whole batches, each instance in several groups."""
    need = prompts_per_generation(args)
    return rows * -(-need // len(rows)) if rows and len(rows) < need else list(rows)
