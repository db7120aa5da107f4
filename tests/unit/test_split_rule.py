"""The one split rule and the evaluation-set guard, end to end from a SWE-bench-schema task file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from swe_srl.benchmark.eval_sets import eval_instances, is_eval_instance
from swe_srl.benchmark.instances import Instance, load_instances, split_of
from swe_srl.cli.app import app
from swe_srl.errors import TaskError, TrainingError
from swe_srl.train.data import guard_eval_instances, read_samples, split_rows
from swe_srl.trajectories.schema import Step, Trajectory, write_jsonl

VERIFIED = Path(__file__).resolve().parents[3] / "shared" / "data" / "swebench-verified.jsonl"


def test_explicit_split_wins_and_the_hash_rule_is_deterministic() -> None:
    assert [split_of("a", s) for s in ("train", "dev", "test")] == ["train", "dev", "test"]
    with pytest.raises(TaskError, match="'validation' is not one of train, dev, test"):
        split_of("a", "validation")
    ids = [f"owner__repo-{n}" for n in range(2000)]
    first = [split_of(i) for i in ids]
    assert first == [split_of(i, None) for i in ids] == [split_of(i, "") for i in ids]
    share = first.count("test") / len(ids)
    assert 0.08 < share < 0.12  # HELD_OUT = 0.1
    assert 0.45 < [split_of(i, held_out=0.5) for i in ids].count("test") / len(ids) < 0.55
    record = {"instance_id": "x__y-1", "repo": "x/y", "base_commit": "c", "patch": "", "test_patch": ""}
    assert Instance.from_record({**record, "problem_statement": "p"}, "t").split == split_of("x__y-1")
    assert Instance.from_record({**record, "problem_statement": "p", "split": "dev"}, "t").split == "dev"


def test_eval_guard_flags_swebench_test_ids_only() -> None:
    assert is_eval_instance("django__django-11099") and is_eval_instance("sympy__sympy-20590")
    assert not is_eval_instance("getmoto__moto-5752")  # SWE-Gym
    assert not is_eval_instance("pandas-dev__pandas.95280573.pr_53652")  # SWE-smith id form
    assert not is_eval_instance("toolz__toolz-m003")  # bundled
    assert not is_eval_instance("django__django-11099-extra")
    assert eval_instances(["psf__requests-2317", "a__b-1", "psf__requests-2317"]) == ["psf__requests-2317"]
    with pytest.raises(TrainingError, match=r"2 SWE-bench evaluation instance\(s\).*--allow-eval-instances"):
        guard_eval_instances(["psf__requests-1", "django__django-2", "x__y-3"], False, "training samples")
    guard_eval_instances(["psf__requests-1"], True, "training samples")  # allowed explicitly


@pytest.mark.skipif(not VERIFIED.is_file(), reason="shared SWE-bench Verified data not present")
def test_eval_guard_knows_every_verified_instance() -> None:
    ids = [json.loads(line)["instance_id"] for line in VERIFIED.read_text().splitlines() if line.strip()]
    assert len(ids) == 500 and eval_instances(ids) == sorted(ids)


def _swebench_schema_tasks(path: Path, ids: list[str]) -> None:
    """Records as SWE-bench publishes them: no split field, FAIL_TO_PASS/PASS_TO_PASS as JSON strings."""
    with path.open("w") as handle:
        for iid in ids:
            record = {
                "repo": "getmoto/moto", "instance_id": iid, "base_commit": "0" * 40, "patch": "",
                "test_patch": "", "problem_statement": f"problem of {iid}", "hints_text": "",
                "created_at": "2023-01-01T00:00:00Z", "version": "4.1",
                "FAIL_TO_PASS": json.dumps(["tests/test_x.py::test_a"]), "PASS_TO_PASS": "[]",
            }  # fmt: skip
            handle.write(json.dumps(record) + "\n")


def test_decompose_with_swebench_schema_tasks_then_training_split(tmp_path: Path) -> None:
    ids = [f"getmoto__moto-{n}" for n in range(40)]
    tasks = tmp_path / "tasks.jsonl"
    _swebench_schema_tasks(tasks, ids)
    trajs = tmp_path / "trajs.jsonl"
    steps = [
        Step(thought="t", action="ls", observation="o"),
        Step(thought="t", action="submit", observation=""),
    ]
    write_jsonl(trajs, [Trajectory(instance_id=i, problem=f"problem of {i}", steps=steps) for i in ids])
    out = tmp_path / "samples.jsonl"
    result = CliRunner().invoke(app, ["decompose", str(trajs), "--tasks", str(tasks), "-o", str(out)])
    assert result.exit_code == 0, result.output
    samples = read_samples(out)
    by_split = {s["split"] for s in samples}
    assert by_split == {"train", "test"}  # the hash rule, not "everything is test"
    expected = {i.instance_id: i.split for i in load_instances(str(tasks))}
    assert all(s["split"] == expected[s["instance_id"]] for s in samples)
    train, test = split_rows(samples)
    assert train and test and not {r["instance_id"] for r in train} & {r["instance_id"] for r in test}


def test_heldout_split_dev_holds_out_only_dev_rows():
    """Choosing defaults evaluates on dev; the test rows are then in neither list (never seen while tuning)."""
    prompt = [{"role": "user", "content": "p"}]
    rows = [
        {"prompt": prompt, "expert_action": "ls", "instance_id": f"i{n}", "split": split}
        for n, split in enumerate(["train", "train", "dev", "test", "dev"])
    ]
    train, dev = split_rows(rows, heldout="dev")
    assert [r["instance_id"] for r in train] == ["i0", "i1"]
    assert [r["instance_id"] for r in dev] == ["i2", "i4"]
    train, test = split_rows(rows)
    assert [r["instance_id"] for r in test] == ["i3"]
