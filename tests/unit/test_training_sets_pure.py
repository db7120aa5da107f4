"""SWE-Gym and SWE-smith records load as SWE-bench instances: fields, source, published image, the reversed bug
patch, the eval-set guard, and the one error an offline build gives without a spec (fixtures the project writes)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest

from swe_srl.benchmark.instances import Instance, load_hf, load_instances
from swe_srl.benchmark.published import published_image, published_setup, published_spec
from swe_srl.benchmark.specs import instance_spec
from swe_srl.benchmark.training_sets import (
    SWE_GYM,
    SWE_SMITH,
    reverse_patch,
    swe_gym_image,
    swe_smith_image,
)
from swe_srl.benchmark.training_specs import offline_spec
from swe_srl.errors import TaskError, TrainingError
from swe_srl.train.data import guard_eval_instances

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "training_sets"
GYM, SMITH = FIXTURES / "swe-gym.jsonl", FIXTURES / "swe-smith.jsonl"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@e",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@e",
}


def git(repo: Path, *args: str, stdin: str | None = None) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True, text=True,
                          check=True, env={**os.environ, **GIT_ENV})  # fmt: skip
    return proc.stdout


def test_swe_gym_records_load_with_their_source_and_image() -> None:
    mypy, moto = load_instances(f"swe-gym:{GYM}")
    assert (mypy.repo, mypy.version, mypy.base_commit) == (
        "python/mypy",
        "1.6",
        "d7b24514d7301f86031b7d1e2215cf8c2476bec0",
    )
    assert mypy.FAIL_TO_PASS == [
        "mypy/test/testcheck.py::TypeCheckSuite::check-attr.test::testSlotsNonSlotsBase"
    ]
    assert moto.FAIL_TO_PASS == ["tests/test_ssm/test_ssm_boto3.py::test_describe_parameters__multiple_tags"]
    assert moto.PASS_TO_PASS == []  # JSON-string lists, as SWE-bench's own HF rows hold them
    assert mypy.extra["source"] == SWE_GYM and mypy.extra["created_at"] == "2023-08-28T12:00:00Z"
    assert published_image(mypy) == "xingyaoww/sweb.eval.x86_64.python_s_mypy-15976"
    assert (
        published_image(moto)
        == swe_gym_image("getmoto__moto-5752")
        == "xingyaoww/sweb.eval.x86_64.getmoto_s_moto-5752"
    )
    assert mypy.patch.startswith("diff --git a/mypy/plugins/attrs.py") and published_setup(mypy) == []
    assert mypy.split in ("train", "test")  # the one split rule, as for every instance


def test_a_plain_swe_bench_file_is_not_marked() -> None:
    # the same records through a plain path: SWE-bench records, no source, no published image (as before)
    mypy = load_instances(str(GYM))[0]
    assert "source" not in mypy.extra and published_image(mypy) is None


def test_swe_smith_records_become_swe_bench_records() -> None:
    with_commit, without = load_instances(str(SMITH))  # recognised by the swesmith/ mirror repo
    bug = json.loads(SMITH.read_text().splitlines()[0])["patch"]
    assert with_commit.extra["source"] == SWE_SMITH and with_commit.extra["bug_patch"] == bug
    assert with_commit.patch == reverse_patch(bug) and "+    return a + b" in with_commit.patch
    assert with_commit.oracle_files == ["src/calc.py"] and with_commit.test_patch == ""
    assert with_commit.base_commit == "89abcdef0123456789abcdef0123456789abcdef"
    # SWE-smith runs and grades the FAIL_TO_PASS files only: the other files' tests are kept aside
    assert with_commit.PASS_TO_PASS == ["tests/test_calc.py::test_neg"]
    assert with_commit.extra["PASS_TO_PASS_all"] == [
        "tests/test_calc.py::test_neg",
        "tests/test_other.py::test_other",
    ]
    assert published_image(with_commit) == "jyangballin/swesmith.x86_64.tinyorg_1776_calc.0123abcd"
    assert (
        published_image(without)
        == swe_smith_image("swesmith/tinyorg__calc.0123abcd")
        == published_image(with_commit)
    )
    assert without.base_commit == without.instance_id  # no base_commit and no repo_dir: the branch's name
    assert published_spec(with_commit) == {
        "test_cmd": "pytest --disable-warnings --color=no --tb=no --verbose",
        "test_files": ["tests/test_calc.py"],
    }
    # converting again (a record written back by to_record) changes nothing
    assert Instance.from_record(with_commit.to_record()) == with_commit
    assert load_instances(f"swe-smith:{SMITH}") == [with_commit, without]


def test_reverse_patch_undoes_the_bug_in_a_real_repo(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    (repo / "x.py").write_text("a\nb\nc\n")
    (repo / "old.txt").write_text("keep\n")
    (repo / "gone.txt").write_text("gone\n")
    (repo / "eof.txt").write_text("no newline")
    (repo / "run.sh").write_text("#!/bin/sh\n")
    (repo / "t\u00e9st file.py").write_text("x = 1\n")  # git quotes this path
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "clean")
    (repo / "x.py").write_text("a\nB\nc\nd\n")
    git(repo, "mv", "old.txt", "new.txt")
    git(repo, "rm", "-q", "gone.txt")
    (repo / "added.py").write_text("print(1)\n")
    (repo / "eof.txt").write_text("no newline either")
    (repo / "run.sh").chmod(0o755)
    (repo / "t\u00e9st file.py").write_text("x = 2\n")
    git(repo, "add", "-A")
    bug = git(repo, "diff", "--cached", "-M")
    assert '"a/t\\303\\251st file.py"' in bug
    git(repo, "commit", "-qm", "bug")
    git(repo, "apply", "--index", "-", stdin=reverse_patch(bug))
    assert git(repo, "diff", "--cached", "HEAD~1", "--stat") == ""  # back at the clean commit, modes included
    assert reverse_patch(reverse_patch(bug)) == git(repo, "diff", "HEAD~1", "HEAD", "-M")
    with pytest.raises(TaskError, match="no text reverse"):
        reverse_patch("diff --git a/b.bin b/b.bin\nGIT binary patch\nliteral 1\nKs@N\n", "x.jsonl:3")


def test_swe_smith_branch_resolves_in_a_local_mirror(tmp_path: Path) -> None:
    repo = tmp_path / "mirror"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    (repo / "f.py").write_text("x = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "clean")
    git(repo, "checkout", "-q", "-b", "o__r.0123abcd.bug1")
    (repo / "f.py").write_text("x = 2\n")
    git(repo, "commit", "-qam", "Bug Patch")
    record = {"instance_id": "o__r.0123abcd.bug1", "repo": "swesmith/o__r.0123abcd", "problem_statement": "x",
              "patch": git(repo, "diff", "main", "HEAD"), "FAIL_TO_PASS": [], "PASS_TO_PASS": [], "repo_dir": str(repo)}  # fmt: skip
    instance = Instance.from_record(record)
    assert instance.base_commit == git(repo, "rev-parse", "HEAD").strip()
    assert instance.patch == git(repo, "diff", "HEAD", "main")  # the fix: back to the clean commit


@pytest.mark.skipif(importlib.util.find_spec("swebench") is None, reason="swebench spec tables not installed")
def test_an_offline_build_without_a_spec_gives_one_clear_error() -> None:
    # the spec table: swebench 4.1.0's has SWE-bench's repositories, not SWE-Gym's
    mypy = load_instances(f"swe-gym:{GYM}")[0]
    with pytest.raises(TaskError) as err:
        offline_spec(mypy)
    message = str(err.value)
    assert (
        "python__mypy-15976" in message and "python/mypy" in message and "--image-source swebench" in message
    )
    assert "xingyaoww/sweb.eval.x86_64.python_s_mypy-15976" in message and "\n" not in message
    with pytest.raises(TaskError, match="names no base_commit.*--image-source"):
        offline_spec(load_instances(str(SMITH))[1])
    # with a spec of its own the record builds offline; SWE-bench instances are as before
    env = {"python": "3.11", "test_cmd": "pytest -rA", "install": ""}
    assert offline_spec(Instance.from_record({**mypy.to_record(), "env": env})) == env
    verified = Instance.from_record({**mypy.to_record(), "source": None, "instance_id": "pallets__flask-5014",
                                     "repo": "pallets/flask", "version": "2.3"})  # fmt: skip
    assert offline_spec(verified) == instance_spec(verified)


def test_swe_smith_env_spec_runs_the_fail_to_pass_files() -> None:
    record = json.loads(SMITH.read_text().splitlines()[0])
    instance = Instance.from_record({**record, "env": {"python": "3.11", "test_cmd": "pytest -rA"}})
    assert instance.extra["env"]["test_files"] == ["tests/test_calc.py"]
    assert offline_spec(instance)["test_files"] == ["tests/test_calc.py"]


def test_the_eval_set_guard_refuses_verified_and_allows_the_training_sets() -> None:
    gym, smith = load_instances(f"swe-gym:{GYM}"), load_instances(str(SMITH))
    guard_eval_instances([i.instance_id for i in gym + smith], allow=False, what="RLVR episodes")
    with pytest.raises(TrainingError, match="django__django-11099"):
        guard_eval_instances(
            ["python__mypy-15976", "django__django-11099"], allow=False, what="RLVR episodes"
        )
    # a SWE-smith PR mirror of a SWE-bench test-set repository re-creates that pull request
    with pytest.raises(TrainingError, match="pallets__flask.bc098406.pr_5014"):
        guard_eval_instances(["pallets__flask.bc098406.pr_5014"], allow=False, what="tasks")
    guard_eval_instances(
        ["pallets__flask.bc098406.func_pm_op_change__x1", "getmoto__moto.694ce1f4.pr_7331"], False, "t"
    )


def test_the_hf_loader_marks_the_training_sets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `datasets` loads a local directory named like the HF id: the real HF code path, offline
    pytest.importorskip("datasets")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "SWE-bench" / "SWE-smith").mkdir(parents=True)
    (tmp_path / "SWE-bench" / "SWE-smith" / "train.jsonl").write_text(
        SMITH.read_text().splitlines()[0] + "\n"
    )
    (instance,) = load_hf(SWE_SMITH, "train")
    assert (
        instance.extra["source"] == SWE_SMITH and instance.test_patch == "" and "bug_patch" in instance.extra
    )
    assert instance.extra["image_name"] == "jyangballin/swesmith.x86_64.tinyorg_1776_calc.0123abcd"


def test_bad_training_set_input_names_the_value() -> None:
    with pytest.raises(TaskError, match="does not exist"):
        load_instances("swe-smith:/nonexistent/tasks.jsonl")
    with pytest.raises(TaskError, match=r"x\.jsonl:1: SWE-smith record: field 'patch' must be a string"):
        Instance.from_record(
            {"instance_id": "a__b.0123abcd.c", "repo": "swesmith/a__b.0123abcd"}, "x.jsonl:1"
        )
