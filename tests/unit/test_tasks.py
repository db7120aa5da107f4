"""Loaders (every input form and error), oracle files, spec lookup and test commands."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from swe_srl.benchmark.instances import Instance, load_instances, select_instances
from swe_srl.errors import TaskError

SHARED = Path(os.environ.get("SWE_SRL_SHARED", Path(__file__).resolve().parents[2] / "../shared"))
PATCH = """diff --git a/pkg/core.py b/pkg/core.py
--- a/pkg/core.py
+++ b/pkg/core.py
@@ -1,2 +1,2 @@
-x = 1
+x = 2
 y = 3
diff --git a/pkg/new.py b/pkg/new.py
new file mode 100644
--- /dev/null
+++ b/pkg/new.py
@@ -0,0 +1 @@
+z = 1
"""


def record(**over) -> dict:
    base = {"instance_id": "o__r-1", "repo": "o/r", "base_commit": "abc", "patch": PATCH, "test_patch": "",
            "problem_statement": "bug", "version": "1.0", "FAIL_TO_PASS": ["t::a"], "PASS_TO_PASS": '["t::b"]'}  # fmt: skip
    return {**base, **over}


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_jsonl_lists_and_json_strings(tmp_path: Path) -> None:
    (inst,) = load_instances(str(write_jsonl(tmp_path / "d.jsonl", [record()])))
    assert inst.FAIL_TO_PASS == ["t::a"] and inst.PASS_TO_PASS == ["t::b"]


def test_parquet_roundtrip(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([record(), record(instance_id="o__r-2")]), tmp_path / "d.parquet")
    assert [i.instance_id for i in load_instances(str(tmp_path / "d.parquet"))] == ["o__r-1", "o__r-2"]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("{not json", "d.jsonl:2: not valid JSON"),  # syntax error names the line
        (
            record(FAIL_TO_PASS="[oops"),
            "d.jsonl:2: field 'FAIL_TO_PASS' is not a JSON list",
        ),  # bad JSON string
        (record(PASS_TO_PASS=[1, 2]), "d.jsonl:2: field 'PASS_TO_PASS' must be a list"),  # non-string ids
        (
            {k: v for k, v in record().items() if k != "repo"},
            "d.jsonl:2: missing required field 'repo'",
        ),  # missing
        (record(patch=5), "d.jsonl:2: field 'patch' must be a string"),  # wrong type
        ("[1, 2]", "d.jsonl:2: expected a JSON object"),  # not an object
    ],
)
def test_jsonl_errors_name_file_line_field(tmp_path: Path, row, message: str) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [record(), row])
    with pytest.raises(TaskError, match=message):
        load_instances(str(path))


def test_parquet_error_names_row(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([record(), record(instance_id=" ")]), tmp_path / "d.parquet")
    with pytest.raises(TaskError, match=r"d.parquet:row 2: field 'instance_id' is empty"):
        load_instances(str(tmp_path / "d.parquet"))


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("missing.jsonl", "does not exist"),  # a path that is not there
        ("not a dataset", "unknown dataset"),  # neither a path, a suite nor an HF id
    ],
)
def test_unknown_datasets(name: str, message: str) -> None:
    with pytest.raises(TaskError, match=message):
        load_instances(name)


def test_split_filter_and_select(tmp_path: Path) -> None:
    rows = [record(instance_id="a", split="train"), record(instance_id="b", split="test")]
    path = str(write_jsonl(tmp_path / "d.jsonl", rows))
    assert [i.instance_id for i in load_instances(path, split="train")] == ["a"]
    assert [i.instance_id for i in select_instances(load_instances(path), ["b"])] == ["b"]
    with pytest.raises(TaskError, match="unknown instance id"):
        select_instances(load_instances(path), ["zzz"])


def test_oracle_files_from_gold_patch() -> None:
    # modified and added files, a/ b/ prefixes stripped, /dev/null never listed
    assert Instance.from_record(record()).oracle_files == ["pkg/core.py", "pkg/new.py"]


def test_record_roundtrip_keeps_extra() -> None:
    inst = Instance.from_record(record(difficulty="easy"))
    assert inst.extra == {"difficulty": "easy"}
    assert Instance.from_record(inst.to_record()) == inst


VERIFIED = SHARED / "data" / "swebench-verified.jsonl"
SPECS = SHARED / "data" / "swebench-specs-py.json"


@pytest.mark.skipif(not VERIFIED.is_file(), reason="shared SWE-bench Verified dump absent")
def test_verified_loads_with_oracle_files() -> None:
    instances = load_instances(str(VERIFIED))
    assert len(instances) == 500
    assert all(i.oracle_files and i.FAIL_TO_PASS for i in instances)


@pytest.mark.skipif(not (VERIFIED.is_file() and SPECS.is_file()), reason="shared SWE-bench dumps absent")
def test_spec_lookup_matches_dump_for_all_verified() -> None:
    if importlib.util.find_spec("swebench") is None:
        pytest.skip("optional: pip install --no-deps swebench==4.1.0")
    from swe_srl.benchmark.specs import instance_spec, test_command

    table = json.loads(SPECS.read_text())["MAP_REPO_VERSION_TO_SPECS_PY"]
    instances = load_instances(str(VERIFIED))
    assert all(instance_spec(i) == table[i.repo][i.version] for i in instances)
    django = next(i for i in instances if i.repo == "django/django")
    assert (
        test_command(django).startswith("./tests/runtests.py")
        and ".py" not in test_command(django).split()[-1]
    )
    assert not [m for m in __import__("sys").modules if m.startswith("swebench")]  # no stub left behind


def test_spec_errors_and_bundled_env() -> None:
    from swe_srl.benchmark.specs import base_python, instance_spec, test_command

    env = {"python": "3.11", "test_cmd": "pytest -rA", "test_files": ["tests/t.py"]}
    assert test_command(Instance.from_record(record(env=env))) == "pytest -rA tests/t.py"
    with pytest.raises(TaskError, match="no environment spec for repo 'o/r'"):
        instance_spec(Instance.from_record(record()))
    assert [base_python(v) for v in ("3.6", "3.9", "3.10", "3.12")] == ["3.9", "3.9", "3.11", "3.13"]
