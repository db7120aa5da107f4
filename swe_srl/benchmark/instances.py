"""Task instances in the SWE-bench schema, and where they come from.

Loaders (HF dataset id, JSONL/parquet file, bundled suite name) live below the schema. Records of the training
sets (SWE-Gym, SWE-smith) are turned into SWE-bench records on the way in (``benchmark/training_sets.py``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from swe_srl import paths
from swe_srl.benchmark.training_sets import PREFIXES, TRAINING_SETS, normalize
from swe_srl.core.patches import file_diffs
from swe_srl.errors import TaskError

REQUIRED_FIELDS = ("instance_id", "repo", "base_commit", "patch", "test_patch", "problem_statement")


def _test_list(value: Any, field_name: str, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError as exc:
            raise TaskError(f"{where}: field {field_name!r} is not a JSON list: {exc}") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TaskError(
            f"{where}: field {field_name!r} must be a list of test ids, got {type(value).__name__}"
        )
    return list(value)


SPLITS = ("train", "dev", "test")
HELD_OUT = 0.1
"""Share of instances the split rule holds out as ``test`` when their records name no split."""


def split_of(instance_id: str, split: object = None, *, held_out: float = HELD_OUT) -> str:
    """The one split rule, used by task loading, decomposition, training and RLVR.

    An explicit ``split`` (``train``, ``dev`` or ``test``, e.g. the bundled suite's) wins. Otherwise the instance
    is ``test`` when the first 8 bytes of ``sha256(instance_id)`` read as a fraction of 2**64 fall below
    ``held_out``, else ``train``: deterministic, independent of seeds and of the other instances, and every
    step of one instance lands on the same side.
    """
    if split in SPLITS:
        return str(split)
    if split not in (None, ""):
        raise TaskError(f"{instance_id}: split {split!r} is not one of {', '.join(SPLITS)}")
    return "test" if id_fraction(instance_id) < held_out else "train"


def id_fraction(key: str) -> float:
    """The first 8 bytes of ``sha256(key)`` as a fraction of 2**64: a deterministic, seed-independent draw in [0, 1)
    per id (the split rule's; the tiny warm-up's share hashes a salted id)."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64


@dataclass
class Instance:
    """One task in the SWE-bench schema. ``extra`` keeps fields we do not interpret (difficulty, created_at...)."""

    instance_id: str
    repo: str
    base_commit: str
    patch: str
    test_patch: str
    problem_statement: str
    hints_text: str = ""
    version: str = ""
    environment_setup_commit: str = ""
    FAIL_TO_PASS: list[str] = field(default_factory=list)
    PASS_TO_PASS: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_record(
        cls, record: dict[str, Any], where: str = "<record>", *, source: str | None = None
    ) -> Instance:
        """Validate a raw record; ``where`` (``file:line``) is named in every error.

        ``source``: the training set the record comes from (``SWE-Gym/SWE-Gym``...), when the loader knows it; a
        SWE-smith record is recognised by its repo anyway (``training_sets.normalize``).
        """
        record = normalize(record, source, where)
        if not isinstance(record, dict):
            raise TaskError(f"{where}: expected a JSON object, got {type(record).__name__}")
        for name in REQUIRED_FIELDS:
            if name not in record:
                raise TaskError(f"{where}: missing required field {name!r}")
            if not isinstance(record[name], str):
                raise TaskError(
                    f"{where}: field {name!r} must be a string, got {type(record[name]).__name__}"
                )
        if not record["instance_id"].strip():
            raise TaskError(f"{where}: field 'instance_id' is empty")
        known = {f for f in cls.__dataclass_fields__ if f != "extra"}
        return cls(
            **{name: record[name] for name in REQUIRED_FIELDS},
            hints_text=str(record.get("hints_text") or ""),
            version=str(record.get("version") or ""),
            environment_setup_commit=str(record.get("environment_setup_commit") or ""),
            FAIL_TO_PASS=_test_list(record.get("FAIL_TO_PASS"), "FAIL_TO_PASS", where),
            PASS_TO_PASS=_test_list(record.get("PASS_TO_PASS"), "PASS_TO_PASS", where),
            extra={k: v for k, v in record.items() if k not in known},
        )

    def to_record(self) -> dict[str, Any]:
        """The SWE-bench record (lists as lists); ``extra`` fields are merged back."""
        record = asdict(self)
        extra = record.pop("extra")
        return {**extra, **record}

    @property
    def split(self) -> str:
        """This instance's split by :func:`split_of` (the record's own ``split`` field wins)."""
        return split_of(self.instance_id, self.extra.get("split"))

    @property
    def oracle_files(self) -> list[str]:
        """Paths of the files the gold patch modifies (source files only; added/removed files included)."""

        sides = (f.target if f.added else f.source for f in file_diffs(self.patch))
        return list(dict.fromkeys(path for path in sides if path))


# --------------------------------------------------------------------------------------------------- loaders

BUNDLED_PREFIX = "bundled"


def _split_filter(instances: list[Instance], split: str | None, source: str) -> list[Instance]:
    if split is None:
        return instances
    if split not in SPLITS:
        raise TaskError(f"unknown split {split!r} of {source}: choose from {', '.join(SPLITS)}")
    return [i for i in instances if i.split == split]


def load_jsonl(path: Path, source: str | None = None) -> list[Instance]:
    """Instances from a JSONL file; a bad line raises ``TaskError`` naming ``file:line`` and the field."""
    instances = []
    with path.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TaskError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
            instances.append(Instance.from_record(record, where, source=source))
    return instances


def load_parquet(path: Path, source: str | None = None) -> list[Instance]:
    """Instances from a parquet file (needs ``pyarrow``); errors name ``file:row`` (1-based) and the field."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise TaskError(f"{path}: reading parquet needs pyarrow; run `pip install pyarrow`") from None
    rows = pq.read_table(path).to_pylist()
    return [
        Instance.from_record(row, f"{path}:row {n}", source=source) for n, row in enumerate(rows, start=1)
    ]


def load_hf(dataset_id: str, split: str = "test") -> list[Instance]:
    """Instances from a Hugging Face dataset id (e.g. ``princeton-nlp/SWE-bench_Verified``) via ``datasets``.

    The training sets' ids (``SWE-Gym/SWE-Gym``, ``SWE-Gym/SWE-Gym-Lite``, ``SWE-bench/SWE-smith``) mark their
    records with their source and published image.
    """
    try:
        from datasets import load_dataset
    except ImportError:
        raise TaskError(
            f"{dataset_id}: loading a HF dataset needs `pip install swe-srl[train]` (datasets)"
        ) from None
    try:
        rows = load_dataset(dataset_id, split=split)
    except Exception as exc:  # datasets raises many unrelated types (network, missing split, auth)
        raise TaskError(f"cannot load HF dataset {dataset_id!r} split {split!r}: {exc}") from exc
    source = dataset_id if dataset_id in TRAINING_SETS else None
    return [
        Instance.from_record(dict(row), f"{dataset_id}[{split}]:row {n}", source=source)
        for n, row in enumerate(rows, 1)
    ]


def load_instances(dataset: str, *, split: str | None = None) -> list[Instance]:
    """Load a dataset named like users name it.

    ``dataset`` is a JSONL/parquet path, ``bundled`` / ``bundled:train`` / ``bundled:test`` (the offline suite,
    built by `swe-srl tasks build`), ``swe-gym:FILE`` / ``swe-smith:FILE`` (a local export of that training set), or
    a HF dataset id. ``split`` filters on ``extra["split"]`` for local sources and is the HF split for HF ids
    (default ``test``; ``train`` for the training sets, which have no other).
    """
    name, _, suffix = dataset.partition(":")
    if name == BUNDLED_PREFIX:
        built = paths.bundled_suite_file()
        if not built.is_file():
            raise TaskError(f"the bundled suite is not built yet ({built}): run `swe-srl tasks build` first")
        return _split_filter(load_jsonl(built), suffix or split, BUNDLED_PREFIX)
    source = PREFIXES.get(name) if suffix else None
    path = Path(suffix if source else dataset).expanduser()
    if source or path.suffix in (".jsonl", ".json", ".parquet") or path.exists():
        if not path.is_file():
            raise TaskError(f"dataset file {path} does not exist (expected a .jsonl or .parquet file)")
        loader = load_parquet if path.suffix == ".parquet" else load_jsonl
        return _split_filter(loader(path, source), split, str(path))
    if dataset.count("/") == 1 and not dataset.startswith((".", "/", "~")):
        return load_hf(dataset, split or ("train" if dataset in TRAINING_SETS else "test"))
    raise TaskError(
        f"unknown dataset {dataset!r}: use a .jsonl/.parquet path, 'bundled[:train|:dev|:test]', "
        "'swe-gym:FILE' / 'swe-smith:FILE', or a HF id like 'princeton-nlp/SWE-bench_Verified' or 'SWE-Gym/SWE-Gym'"
    )


def select_instances(instances: list[Instance], ids: list[str] | None) -> list[Instance]:
    """Keep the instances named in ``ids`` (in dataset order); an unknown id raises ``TaskError``."""
    if not ids:
        return instances
    known = {i.instance_id for i in instances}
    missing = [i for i in ids if i not in known]
    if missing:
        raise TaskError(
            f"unknown instance id(s) {', '.join(missing)}; the dataset has {len(known)} instances"
        )
    wanted = set(ids)
    return [i for i in instances if i.instance_id in wanted]
