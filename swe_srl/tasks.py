"""Task instances in the SWE-bench schema, and where they come from.

Loaders (HF dataset id, JSONL/parquet file, bundled suite name) live below the schema.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

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
        raise TaskError(f"{where}: field {field_name!r} must be a list of test ids, got {type(value).__name__}")
    return list(value)


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
    def from_record(cls, record: dict[str, Any], where: str = "<record>") -> Instance:
        """Validate a raw record; ``where`` (``file:line``) is named in every error."""
        if not isinstance(record, dict):
            raise TaskError(f"{where}: expected a JSON object, got {type(record).__name__}")
        for name in REQUIRED_FIELDS:
            if name not in record:
                raise TaskError(f"{where}: missing required field {name!r}")
            if not isinstance(record[name], str):
                raise TaskError(f"{where}: field {name!r} must be a string, got {type(record[name]).__name__}")
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
    def oracle_files(self) -> list[str]:
        """Paths of the files the gold patch modifies (source files only; added/removed files included)."""
        from unidiff import PatchSet

        paths = []
        for patched in PatchSet(self.patch):
            path = patched.target_file if patched.is_added_file else patched.source_file
            path = path.removeprefix("a/").removeprefix("b/")
            if path not in paths and path != "/dev/null":
                paths.append(path)
        return paths
