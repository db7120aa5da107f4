"""RLVR's task loading takes the training sets as they load (``--tasks swe-gym:FILE`` / a SWE-smith JSONL) and keeps
refusing SWE-bench evaluation instances among them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("trl")

from swe_srl.benchmark.training_sets import SWE_GYM, SWE_SMITH  # noqa: E402
from swe_srl.errors import TrainingError  # noqa: E402
from swe_srl.train.config import load_config  # noqa: E402
from swe_srl.train.rlvr_run import rlvr_instances  # noqa: E402

pytestmark = pytest.mark.train
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "training_sets"


def _config(tmp_path: Path, tasks: str):
    return load_config(None, ["rlvr.instances=8"], stage="rlvr", init=str(tmp_path), tasks=tasks)


def test_rlvr_episodes_come_from_swe_gym_and_swe_smith(tmp_path: Path) -> None:
    gym = rlvr_instances(_config(tmp_path, f"swe-gym:{FIXTURES / 'swe-gym.jsonl'}"))
    assert [i.instance_id for i in gym] == ["python__mypy-15976", "getmoto__moto-5752"]
    assert {i.extra["source"] for i in gym} == {SWE_GYM}
    smith = rlvr_instances(_config(tmp_path, str(FIXTURES / "swe-smith.jsonl")))
    assert {i.extra["source"] for i in smith} == {SWE_SMITH} and all("bug_patch" in i.extra for i in smith)


def test_rlvr_still_refuses_verified_instances_in_a_training_set_file(tmp_path: Path) -> None:
    record = json.loads((FIXTURES / "swe-gym.jsonl").read_text().splitlines()[0])
    tasks = tmp_path / "mixed.jsonl"
    ids = ["python__mypy-15976", "django__django-11099"]  # the second has SWE-bench's test-set id form
    tasks.write_text("".join(json.dumps({**record, "instance_id": i, "split": "train"}) + "\n" for i in ids))
    with pytest.raises(TrainingError, match="django__django-11099.*--allow-eval-instances"):
        rlvr_instances(_config(tmp_path, f"swe-gym:{tasks}"))
