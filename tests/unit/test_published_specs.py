"""The test command of training-set records graded without an ``env`` spec: SWE-smith's own command over the
FAIL_TO_PASS files (its published image), SWE-Gym's from the spec table when the table has the repo/version."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swe_srl.benchmark import specs
from swe_srl.benchmark.instances import Instance, load_instances
from swe_srl.benchmark.training_sets import SWE_SMITH_TEST_CMD
from swe_srl.benchmark.training_specs import offline_spec
from swe_srl.errors import TaskError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "training_sets"
GYM, SMITH = FIXTURES / "swe-gym.jsonl", FIXTURES / "swe-smith.jsonl"


@pytest.fixture
def spec_table(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """A spec table dump holding only ``{repo: {version: spec}}`` given to the returned function."""

    def use(table: dict) -> None:
        dump = tmp_path / "specs.json"
        dump.write_text(json.dumps({"MAP_REPO_VERSION_TO_SPECS_PY": table}))
        monkeypatch.setenv("SWE_SRL_SWEBENCH_SPECS", str(dump))
        specs.swebench_table.cache_clear()

    yield use
    specs.swebench_table.cache_clear()


def test_a_swe_smith_record_without_env_runs_swe_smiths_command(spec_table) -> None:
    spec_table({})
    smith = load_instances(str(SMITH))[0]
    assert "env" not in smith.extra
    assert specs.test_command(smith) == f"{SWE_SMITH_TEST_CMD} tests/test_calc.py"
    assert specs.test_files(smith) == ["tests/test_calc.py"] and specs.eval_prelude(smith) == []
    # an offline build still needs an install recipe: the published test spec is not one
    with pytest.raises(TaskError, match="no environment spec for an offline build.*--image-source swebench"):
        offline_spec(smith)
    with pytest.raises(
        TaskError, match="SWE-bench/SWE-smith repo swesmith/tinyorg__calc.0123abcd has no spec"
    ):
        specs.instance_spec(smith, published=False)


def test_a_swe_smith_record_with_env_keeps_its_command(spec_table) -> None:
    spec_table({})
    record = json.loads(SMITH.read_text().splitlines()[0]) | {
        "env": {"python": "3.11", "test_cmd": "pytest -rA"}
    }
    assert specs.test_command(Instance.from_record(record)) == "pytest -rA tests/test_calc.py"


def test_swe_gym_uses_the_spec_table_or_says_where_its_specs_are(spec_table) -> None:
    mypy = load_instances(f"swe-gym:{GYM}")[0]
    spec_table({mypy.repo: {mypy.version: {"python": "3.11", "test_cmd": "pytest -n0 -rA"}}})
    assert specs.test_command(mypy).startswith("pytest -n0 -rA ")
    spec_table({})
    with pytest.raises(TaskError) as err:
        specs.test_command(mypy)
    message = str(err.value)
    assert (
        message.startswith(f"{mypy.instance_id}: {mypy.extra['source']} repo python/mypy")
        and "\n" not in message
    )
    assert "SWE-Gym/SWE-Bench-Fork" in message and "SWE_SRL_SWEBENCH_SPECS" in message and "'env'" in message


def test_other_records_keep_the_table_errors(spec_table) -> None:
    spec_table({"pallets/flask": {"2.3": {"test_cmd": "pytest -rA"}}})
    base = {"base_commit": "abc", "problem_statement": "p", "patch": "", "test_patch": ""}
    flask = Instance.from_record(
        base | {"instance_id": "pallets__flask-1", "repo": "pallets/flask", "version": "2.0"}
    )
    with pytest.raises(TaskError, match="has no spec for version '2.0'"):
        specs.test_command(flask)
    other = Instance.from_record(base | {"instance_id": "x__y-1", "repo": "x/y", "version": "1"})
    with pytest.raises(TaskError, match="no environment spec for repo 'x/y'"):
        specs.test_command(other)


FORK_CONSTANTS = """
MAP_REPO_VERSION_TO_SPECS = {"getmoto/moto": {"4.0": {"python": "3.12", "install": "make init",
                                                     "test_cmd": "pytest -n0 -rA"}}}
MAP_REPO_VERSION_TO_SPECS = {k.lower(): v for k, v in MAP_REPO_VERSION_TO_SPECS.items()}
MAP_REPO_TO_REQS_PATHS = {"Project-MONAI/MONAI": ["requirements-dev.txt"]}
"""


def test_swe_gyms_fork_layout_is_read_when_installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # SWE-Gym/SWE-Bench-Fork as pip installs it: swebench 2's one-module harness/constants.py, the spec table under
    # its old name with lower-case repo keys, and a package __init__ that needs what is not installed (bs4)
    package = tmp_path / "swebench"
    (package / "harness").mkdir(parents=True)
    (package / "__init__.py").write_text("import bs4  # noqa\n")
    (package / "harness" / "__init__.py").write_text("")
    (package / "harness" / "constants.py").write_text(FORK_CONSTANTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("SWE_SRL_SWEBENCH_SPECS", raising=False)
    specs.swebench_table.cache_clear()
    try:
        moto = Instance.from_record(
            {"instance_id": "getmoto__moto-5752", "repo": "getmoto/moto", "base_commit": "0" * 40, "patch": "",
             "test_patch": "", "problem_statement": "", "version": "4.0"}
        )  # fmt: skip
        assert specs.instance_spec(moto)["install"] == "make init"
        monai = Instance.from_record({**moto.to_record(), "instance_id": "Project-MONAI__MONAI-1",
                                      "repo": "Project-MONAI/MONAI"})  # fmt: skip
        with pytest.raises(TaskError, match="no environment spec for repo 'Project-MONAI/MONAI'"):
            specs.instance_spec(monai)
        reqs = specs.swebench_table("MAP_REPO_TO_REQS_PATHS")
        assert specs.repo_entry(reqs, "Project-MONAI/MONAI") == ["requirements-dev.txt"]
        assert specs.swebench_table("MAP_REPO_TO_ENV_YML_PATHS") == {}  # not in that module: empty
    finally:
        specs.swebench_table.cache_clear()
