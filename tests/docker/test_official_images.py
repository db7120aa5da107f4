"""The ``swebench`` image source, offline: an image laid out like SWE-bench's official ones, built here.

The stand-in (tagged with the official name of its instance) has what the official images have and our harness relies
on: ``/opt/miniconda3/bin/activate`` whose ``conda activate testbed`` puts ``/opt/miniconda3/envs/testbed`` first on
PATH (a shell function standing in for conda), a conda base interpreter ``/opt/miniconda3/bin/python3`` (>= 3.9),
the env ``testbed`` holding pytest, ``/testbed`` a git repo at the base commit, no harness tools. Each interpreter
announces its ``sys.prefix`` on stderr at start (a ``.pth`` file), so the logs show where the tests and the tools
ran. The instance id is this test's own: other tests' instances never find an official image.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from agent_tasks import make_tiny_dataset

from swe_srl.benchmark.instances import Instance, load_instances
from swe_srl.infra.engine import docker_client, image_exists
from swe_srl.infra.image_build import build_context, checkout_base_commit
from swe_srl.infra.images import ensure_env_image, recipe_hash
from swe_srl.infra.official import official_image_name
from swe_srl.infra.recipes import instance_recipes
from swe_srl.infra.sandbox.factory import open_sandbox
from swe_srl.infra.sources import choose_source

pytestmark = pytest.mark.docker

INSTANCE_ID = "tiny__calc-official"
ACTIVATE = r"""# stand-in for conda's activate script: `conda activate NAME` as conda does it, for PATH and CONDA_*
conda() {
  if [ "$1" = activate ] && [ -d "/opt/miniconda3/envs/$2" ]; then
    export CONDA_DEFAULT_ENV="$2" CONDA_PREFIX="/opt/miniconda3/envs/$2" PATH="/opt/miniconda3/envs/$2/bin:$PATH"
  else
    echo "conda: cannot $*" >&2; return 1
  fi
}
export CONDA_DEFAULT_ENV=base CONDA_PREFIX=/opt/miniconda3
"""
MARK = "import sys; sys.stderr.write('[fake-conda] sys.prefix=' + sys.prefix + chr(10))\n"
PYTEST = "#!/opt/miniconda3/envs/testbed/bin/python\nimport sys\nfrom pytest import console_main\nsys.exit(console_main())\n"  # fmt: skip
DOCKERFILE = """FROM {env_image}
RUN /usr/bin/python3 -m venv /opt/miniconda3 && /usr/bin/python3 -m venv /opt/miniconda3/envs/testbed \\
 && echo /opt/venv/lib/python3.11/site-packages > /opt/miniconda3/envs/testbed/lib/python3.11/site-packages/deps.pth
COPY activate /opt/miniconda3/bin/activate
COPY mark.pth /opt/miniconda3/lib/python3.11/site-packages/mark.pth
COPY mark.pth /opt/miniconda3/envs/testbed/lib/python3.11/site-packages/mark.pth
COPY pytest /opt/miniconda3/envs/testbed/bin/pytest
COPY testbed /testbed
RUN chmod 0755 /opt/miniconda3/envs/testbed/bin/pytest
ENV PATH=/opt/miniconda3/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR /testbed/
LABEL swe-srl.test-recipe={recipe}
"""


def build_stand_in(name: str, env_image: str, repo_dir: Path, commit: str) -> None:
    """The stand-in prebuilt image ``name``: ``/testbed`` = ``commit`` of ``repo_dir`` (rebuilt when changed)."""
    files = {"activate": ACTIVATE.encode(), "mark.pth": MARK.encode(), "pytest": PYTEST.encode()}
    recipe = recipe_hash(env_image, DOCKERFILE, *files.values(), commit)  # commits of fixed dates: reused
    if image_exists(name) and docker_client().images.get(name).labels.get("swe-srl.test-recipe") == recipe:
        return
    with tempfile.TemporaryDirectory() as tmp:
        checkout_base_commit(repo_dir, commit, Path(tmp) / "testbed")
        build_context(
            name, DOCKERFILE.format(env_image=env_image, recipe=recipe), files, None, context=Path(tmp)
        )


@pytest.fixture(scope="module")
def env_image(docker_engine, tmp_path_factory) -> tuple[str, Path]:
    """The tiny tasks' env image (pytest in /opt/venv, shared with the agent tests) and their dataset's folder."""
    root = tmp_path_factory.mktemp("official")
    base = next(i for i in load_instances(str(make_tiny_dataset(root))) if i.instance_id == "tiny__calc-add")
    return ensure_env_image(instance_recipes(base, source="debootstrap")[0]), root


@pytest.fixture(scope="module")
def official(env_image) -> tuple[Instance, Path]:
    """(the instance, its one-record JSONL) with its stand-in official image built (reused when unchanged)."""
    image, root = env_image
    record = {**json.loads(Path(root / "tiny.jsonl").read_text().splitlines()[0]), "instance_id": INSTANCE_ID}
    dataset = root / "official.jsonl"
    dataset.write_text(json.dumps(record) + "\n")
    instance = load_instances(str(dataset))[0]
    build_stand_in(
        official_image_name(INSTANCE_ID), image, Path(instance.extra["repo_dir"]), instance.base_commit
    )
    return instance, dataset


def test_official_name_is_the_stand_in(official) -> None:
    assert official_image_name(INSTANCE_ID) == "swebench/sweb.eval.x86_64.tiny_1776_calc-official:latest"
    choice = choose_source(official_image_name(INSTANCE_ID), "3.11", "auto")  # the default finds it
    assert choice.source == "swebench"
    assert choice.probe == {official_image_name(INSTANCE_ID): "present locally"}


def test_validate_with_the_official_image(official, tmp_path: Path) -> None:
    _, dataset = official
    out = tmp_path / "validation"
    cmd = [sys.executable, "-m", "swe_srl.cli", "tasks", "validate", str(dataset), "-o", str(out), "--image-source", "swebench"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=os.environ.copy())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    entry = json.loads((out / "validation.json").read_text())[INSTANCE_ID]
    assert (entry["gold"], entry["empty"], entry["valid"]) == ("resolved", "unresolved", True), entry
    prov = entry["provenance"]
    assert prov["image_source"] == "swebench" and prov["image_source_requested"] == "swebench"
    assert prov["official_image"] == official_image_name(INSTANCE_ID) and prov["image"].startswith(
        "swe-srl/official:"
    )
    assert prov["official_image_id"] == docker_client().images.get(official_image_name(INSTANCE_ID)).id
    for name in ("gold", "empty"):  # the tests ran in the testbed env, as the official eval script runs them
        log = Path(entry[f"{name}_log"]).read_text()
        assert "[fake-conda] sys.prefix=/opt/miniconda3/envs/testbed" in log, log[-2000:]
        assert "sys.prefix=/opt/venv" not in log and "sys.prefix=/opt/miniconda3\n" not in log


def test_sessions_run_in_testbed_and_tools_on_conda_base(official, monkeypatch) -> None:
    instance, _ = official
    monkeypatch.setenv("SWE_SRL_IMAGE_SOURCE", "swebench")
    with open_sandbox(instance, profile="episode") as box:
        assert box.spec.image.startswith("swe-srl/official:")
        env = box.run('echo "$CONDA_DEFAULT_ENV $(command -v python) $(command -v open)"').output.split()
        assert env[-3:] == ["testbed", "/opt/miniconda3/envs/testbed/bin/python", "/usr/local/bin/open"]
        assert box.run("head -1 /usr/local/bin/open").output.strip() == "#!/opt/miniconda3/bin/python3"
        opened = box.run("open calc.py")
        assert opened.exit_code == 0 and "[File: /testbed/calc.py (" in opened.output, opened.output
        assert "[fake-conda] sys.prefix=/opt/miniconda3\n" in opened.output  # the tool ran on conda's base
        assert "sys.prefix=/opt/miniconda3/envs/testbed" not in opened.output
        box.run("exit")  # a replaced session is activated again
        again = box.run("python -c 'import sys; print(sys.prefix)'")
        assert again.output.strip().endswith("/opt/miniconda3/envs/testbed"), again.output


def test_eval_report_records_the_probe(official, tmp_path: Path) -> None:
    _, dataset = official
    env = {k: v for k, v in os.environ.items() if k != "SWE_SRL_IMAGE_SOURCE"}  # the default: auto, probed
    cmd = [sys.executable, "-m", "swe_srl.cli", "eval", "--policy", "gold", "--direct-patch", "--dataset", str(dataset), "-o", str(tmp_path / "run")]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["provenance"]["image_sources"] == ["swebench"] and report["resolved"] == 1, report
    image = report["provenance"]["images"][INSTANCE_ID]
    assert image["image_source_requested"] == "auto"
    assert image["image_probe"] == {official_image_name(INSTANCE_ID): "present locally"}


SMITH_ID = "tinyorg__calcpub.0123abcd.func_pm_op_change__k3j4l5m6"
SMITH_IMAGE = (
    "jyangballin/swesmith.x86_64.tinyorg_1776_calcpub.0123abcd"  # this test's own: no other test finds it
)
CALC = "def add(a, b):\n    return a + b\n"
CALC_TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


@pytest.mark.parametrize("env", [{"python": "3.11", "test_cmd": "pytest -rA", "install": ""}, None])
def test_a_swe_smith_record_runs_in_its_published_image(env_image, tmp_path: Path, env: dict | None) -> None:
    """The published image holds the clean commit; the layer commits the bug (``published_setup``) and names the
    record's branch at it, so gold resolves and empty does not, with no mirror and no spec table entry; without an
    ``env`` spec the tests run with SWE-smith's own command (``published.published_spec``)."""
    image, root = env_image
    mirror = root / "tinyorg__calcpub.0123abcd"
    if not mirror.exists():
        _mirror(mirror)
    clean = _git(mirror, "rev-parse", "main")
    build_stand_in(SMITH_IMAGE, image, mirror, clean)
    record = {"instance_id": SMITH_ID, "repo": "swesmith/tinyorg__calcpub.0123abcd",
              "patch": _git(mirror, "diff", "main", SMITH_ID, raw=True), "FAIL_TO_PASS": ["test_calc.py::test_add"],
              "PASS_TO_PASS": [], "image_name": SMITH_IMAGE, "problem_statement": "add(2, 3) is -1.",
              **({"env": env} if env else {})}  # fmt: skip
    dataset = tmp_path / "smith.jsonl"
    dataset.write_text(json.dumps(record) + "\n")
    (instance,) = load_instances(str(dataset))
    assert instance.base_commit == SMITH_ID  # no mirror: the record names its branch
    out = tmp_path / "validation"
    cmd = [sys.executable, "-m", "swe_srl.cli", "tasks", "validate", str(dataset), "-o", str(out), "--image-source", "swebench"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    entry = json.loads((out / "validation.json").read_text())[SMITH_ID]
    assert (entry["gold"], entry["empty"]) == ("resolved", "unresolved"), entry
    log = Path(entry["gold_log"]).read_text()
    assert ("test_calc.py::test_add PASSED" in log) == (env is None), log[
        -1500:
    ]  # --verbose: SWE-smith's command
    assert (
        entry["provenance"]["official_image"] == SMITH_IMAGE
        and entry["provenance"]["image_source"] == "swebench"
    )


def _git(repo: Path, *args: str, raw: bool = False) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e", "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z"}  # fmt: skip
    out = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    ).stdout
    return out if raw else out.strip()


def _mirror(repo: Path) -> None:
    """SWE-smith's mirror layout: ``main`` clean, the branch named by the instance id = main + the bug, committed."""
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    for branch, calc, message in (
        ("main", CALC, "Initial commit"),
        (SMITH_ID, CALC.replace("+", "-"), "Bug Patch"),
    ):
        if branch != "main":
            _git(repo, "checkout", "-q", "-b", branch)
        (repo / "calc.py").write_text(calc)
        (repo / "test_calc.py").write_text(CALC_TEST)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", message)
    _git(repo, "checkout", "-q", "main")
