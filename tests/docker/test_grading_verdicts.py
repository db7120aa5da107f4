"""Environment errors vs wrong patches, ``tasks validate`` (filter, resume) and report provenance, on real containers."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest

from swe_srl.benchmark.instances import load_instances, load_jsonl
from swe_srl.benchmark.verdicts import BROKE_RUN, ENV_NO_TESTS
from swe_srl.eval.run import evaluate
from swe_srl.eval.settings import EvalSettings
from swe_srl.grading.runner import grade
from swe_srl.grading.validate import RATES, STATE, VALID, _prune, validate
from swe_srl.infra.engine import image_exists

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def good(docker_engine):
    return load_instances("bundled:test")[0]


def broken_copy(instance, suffix: str = ""):
    """The instance (its image, unless ``suffix`` renames it) with a test command naming a file that does not exist."""
    broken = copy.deepcopy(instance)
    broken.instance_id += suffix
    broken.extra["env"] = {**broken.extra["env"], "test_files": ["test/does_not_exist.py"]}
    return broken


def test_no_test_runs_even_without_a_patch_is_an_environment_error(good) -> None:
    broken = broken_copy(good)
    result = grade(broken, broken.patch)
    assert result.status == "error" and result.reason == ENV_NO_TESTS, result.log[-1500:]
    assert "does_not_exist.py" in result.log  # the cause: the empty patch's log tail
    assert result.image["image_id"].startswith("sha256:")


def test_a_patch_that_breaks_imports_is_unresolved(good) -> None:
    module = good.oracle_files[0]
    patch = (f"diff --git a/{module} b/{module}\n--- a/{module}\n+++ b/{module}\n@@ -0,0 +1,1 @@\n"
             "+raise ImportError('broken by the patch')\n")  # fmt: skip
    result = grade(good, patch)
    assert result.status == "unresolved" and result.reason == BROKE_RUN, result.log[-1500:]
    assert "broken by the patch" in result.log


def test_report_carries_provenance_and_the_interval(good, tmp_path) -> None:
    broken = broken_copy(good, "-broken")
    report = evaluate(EvalSettings("gold", direct=True), [good, broken], tmp_path / "run")
    image = report["provenance"]["images"][good.instance_id]
    assert image["image_id"].startswith("sha256:") and image["python"] == "3.11"
    assert report["provenance"]["image_sources"][0] in ("debootstrap", "registry")
    assert report["provenance"]["swe_srl_version"] and len(report["provenance"]["git_sha"] or "0" * 40) == 40
    low, high = report["resolved_rate_ci95"]
    assert 0.0 < low < 0.5 < high < 1.0  # 1 resolved of 2
    record = json.loads((tmp_path / "run" / "results" / f"{broken.instance_id}.json").read_text())
    assert (
        record["status"] == "error"
        and ENV_NO_TESTS in record["error"]
        and "does_not_exist.py" in record["error"]
    )
    assert (tmp_path / "run" / record["log_path"]).read_text().count("does_not_exist.py") >= 1


def test_validate_writes_the_filter_resumes_and_prunes(good, tmp_path) -> None:
    broken = broken_copy(good, "-broken")
    dataset = tmp_path / "two.jsonl"
    dataset.write_text("".join(json.dumps(i.to_record()) + "\n" for i in (good, broken)))
    out = tmp_path / "val"
    state = validate(load_jsonl(dataset), out)
    assert state[good.instance_id]["valid"] and state[good.instance_id]["gold"] == "resolved"
    assert state[broken.instance_id]["gold"] == "error" == state[broken.instance_id]["empty"]
    assert state[broken.instance_id]["gold_cause"] == ENV_NO_TESTS
    assert [i.instance_id for i in load_jsonl(out / VALID)] == [good.instance_id]
    assert "does_not_exist.py" in (out / "logs" / f"{broken.instance_id}.gold.log").read_text()
    before = (out / STATE).read_text()
    cli = [sys.executable, "-m", "swe_srl.cli", "tasks", "validate", str(dataset), "-o", str(out)]
    rerun = subprocess.run(cli, capture_output=True, text=True, timeout=300)
    assert rerun.returncode != 0  # one instance is invalid
    assert rerun.stdout.count("(validated before)") == 2, rerun.stdout + rerun.stderr
    assert f"{broken.instance_id}: INVALID gold=error empty=error" in rerun.stdout
    assert f"{good.repo}: gold resolved 1/2, empty resolved 0/2, environment errors 1" in rerun.stdout
    assert json.loads((out / RATES).read_text())[good.repo]["valid"] == 1
    assert (out / STATE).read_text() == before
    tag = state[broken.instance_id]["image"]
    assert tag != state[good.instance_id]["image"] and image_exists(tag)
    validate([broken], tmp_path / "pruned", prune_images=True)
    assert not image_exists(tag)  # the renamed copy's image, built for this test, is gone


def test_prune_keeps_images_swe_srl_did_not_build(docker_engine, tmp_path) -> None:
    # an image a user pulled (an official prebuilt one): no swe-srl.owner label, so pruning leaves it
    tar = tmp_path / "empty.tar"
    subprocess.run(["tar", "-cf", str(tar), "-T", "/dev/null"], check=True)
    tag = "swe-srl-test/not-ours:prune"
    subprocess.run(["docker", "import", str(tar), tag], check=True, capture_output=True)
    try:
        _prune(tag)
        assert image_exists(tag)
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)
